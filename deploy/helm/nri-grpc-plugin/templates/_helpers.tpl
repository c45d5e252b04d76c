{{/*
The plugin's identity, "NN-name".
*/}}
{{- define "nri-grpc-plugin.identity" -}}
{{- $idx := toString .Values.plugin.index -}}
{{- if not (regexMatch "^[0-9]{2}$" $idx) -}}
{{- fail (printf "plugin.index %q must be two digits (quote it: \"05\")" $idx) -}}
{{- end -}}
{{- if not (regexMatch "^[a-zA-Z0-9][a-zA-Z0-9._-]*$" .Values.plugin.name) -}}
{{- fail (printf "plugin.name %q: letters, digits, '.', '_' and '-'" .Values.plugin.name) -}}
{{- end -}}
{{- printf "%s-%s" $idx .Values.plugin.name -}}
{{- end -}}

{{- define "nri-grpc-plugin.fullname" -}}
{{- default .Values.plugin.name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "nri-grpc-plugin.selectorLabels" -}}
app.kubernetes.io/name: {{ .Values.plugin.name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nri-grpc-plugin.labels" -}}
{{ include "nri-grpc-plugin.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: nri-plugin
app.kubernetes.io/part-of: nri-grpc
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "nri-grpc-plugin.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}
