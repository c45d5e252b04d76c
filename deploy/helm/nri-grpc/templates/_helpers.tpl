{{/*
The objects' name: "nrid" unless nameOverride says.
*/}}
{{- define "nri-grpc.name" -}}
{{- default "nrid" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The full name: fullnameOverride, else the release name when it contains the
name ("nrid"), else RELEASE-NAME.
*/}}
{{- define "nri-grpc.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "nri-grpc.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "nri-grpc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nri-grpc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nri-grpc.labels" -}}
{{ include "nri-grpc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: node-daemon
app.kubernetes.io/part-of: nri-grpc
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "nri-grpc.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/*
nri-grpc.tomlValue: one value as TOML. Strings, numbers and booleans, and
lists of them; JSON's escapes (\" \\ \n \uXXXX) are TOML's too.
*/}}
{{- define "nri-grpc.tomlValue" -}}
{{- if kindIs "bool" . -}}
{{- ternary "true" "false" . -}}
{{- else if or (kindIs "string" .) (kindIs "slice" .) (kindIs "float64" .) (kindIs "int" .) (kindIs "int64" .) -}}
{{- toJson . -}}
{{- else -}}
{{- fail (printf "nrid.toml: a value of kind %s cannot be rendered (strings, numbers, booleans and lists of them): %v" (kindOf .) .) -}}
{{- end -}}
{{- end -}}

{{/*
nri-grpc.config: the sections of nrid.toml the chart renders, as a dict of
dicts, with config.settings merged over them.
*/}}
{{- define "nri-grpc.config" -}}
{{- $c := .Values.config -}}
{{- $server := dict "socket" $c.socket "socket_mode" $c.socketMode "plugin_socket_dir" $c.pluginSocketDir "state_dir" $c.stateDir "restart_grace" $c.restartGrace -}}
{{- if $c.socketGroup }}{{ $_ := set $server "socket_group" $c.socketGroup }}{{ end -}}
{{- if $c.notReady }}{{ $_ := set $server "not_ready" $c.notReady }}{{ end -}}
{{- $bridge := dict "runtime_socket" $c.bridge.runtimeSocket "plugin_socket" $c.bridge.pluginSocket -}}
{{- if $c.bridge.pluginName }}{{ $_ := set $bridge "plugin_name" $c.bridge.pluginName }}{{ end -}}
{{- if $c.bridge.pluginIndex }}{{ $_ := set $bridge "plugin_index" (toString $c.bridge.pluginIndex) }}{{ end -}}
{{- $obs := dict "redact_values" $c.redactValues -}}
{{- if .Values.metrics.enabled }}{{ $_ := set $obs "metrics_address" (printf "%s:%d" .Values.metrics.address (int .Values.metrics.port)) }}{{ end -}}
{{- $validator := dict -}}
{{- if $c.requiredPlugins }}{{ $_ := set $validator "required_plugins" $c.requiredPlugins }}{{ end -}}
{{- if .Values.tolerateMissingPluginsAnnotation }}{{ $_ := set $validator "tolerate_missing_plugins_annotation" .Values.tolerateMissingPluginsAnnotation }}{{ end -}}
{{- $cfg := dict "server" $server "runtime" (dict "required" $c.runtimeRequired) "bridge" $bridge "log" (dict "level" $c.logLevel "format" $c.logFormat) "observability" $obs "validator" $validator -}}
{{- /* Keys the pod spec is derived from (mounts, probes, ports) have their own values. */}}
{{- $own := dict "server.socket" "config.socket" "server.plugin_socket_dir" "config.pluginSocketDir" "server.state_dir" "config.stateDir" "observability.metrics_address" "metrics.address and metrics.port" -}}
{{- range $key, $value := $own }}
{{- $kv := splitList "." $key }}
{{- if hasKey (get ($c.settings | default dict) (first $kv) | default dict) (last $kv) }}
{{- fail (printf "config.settings.%s: set %s instead (the pod's mounts, probes and ports follow it)" $key $value) }}
{{- end }}
{{- end -}}
{{- $cfg = mergeOverwrite $cfg (deepCopy ($c.settings | default dict)) -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/*
nri-grpc.selector: one [[plugin]] selector as a TOML inline table.
*/}}
{{- define "nri-grpc.selector" -}}
{{- $parts := list -}}
{{- if .namespaces }}{{ $parts = append $parts (printf "namespaces = %s" (toJson .namespaces)) }}{{ end -}}
{{- if .podLabels }}{{ $parts = append $parts (printf "pod_labels = %s" (toJson .podLabels)) }}{{ end -}}
{{- if .containerNames }}{{ $parts = append $parts (printf "container_names = %s" (toJson .containerNames)) }}{{ end -}}
{{- if hasKey . "runtimeHandlers" }}{{ $parts = append $parts (printf "runtime_handlers = %s" (toJson .runtimeHandlers)) }}{{ end -}}
{{- printf "{ %s }" (join ", " $parts) -}}
{{- end -}}

{{/*
nri-grpc.nridToml: the whole nrid.toml.
*/}}
{{- define "nri-grpc.nridToml" -}}
# nrid.toml rendered by the nri-grpc chart from its values; every key is
# documented in deploy/nrid.toml.
{{- $cfg := include "nri-grpc.config" . | fromYaml }}
{{- /* deploy/nrid.toml's order, then any other section settings names. */}}
{{- $known := list "server" "runtime" "tcp" "log" "observability" "validator" "launch" "bridge" }}
{{- $order := list }}
{{- range $known }}{{ if hasKey $cfg . }}{{ $order = append $order . }}{{ end }}{{ end }}
{{- range keys $cfg | sortAlpha }}{{ if not (has . $known) }}{{ $order = append $order . }}{{ end }}{{ end }}
{{- range $section := $order }}
{{- $keys := get $cfg $section }}
{{- if not (kindIs "map" $keys) }}
{{- fail (printf "config.settings.%s: a section must be a map of keys" $section) }}
{{- end }}
{{- if $keys }}

[{{ $section }}]
{{- range $key := keys $keys | sortAlpha }}
{{ $key }} = {{ include "nri-grpc.tomlValue" (get $keys $key) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $i, $p := .Values.plugins }}
{{- if not $p.name }}
{{- fail (printf "plugins[%d]: name is required (\"NN-name\" or \"name\")" $i) }}
{{- end }}

[[plugin]]
name = {{ toJson $p.name }}
{{- if hasKey $p "required" }}
required = {{ include "nri-grpc.tomlValue" $p.required }}
{{- end }}
{{- if hasKey $p "keepConnected" }}
keep_connected = {{ include "nri-grpc.tomlValue" $p.keepConnected }}
{{- end }}
{{- if $p.maxTimeout }}
max_timeout = {{ toJson $p.maxTimeout }}
{{- end }}
{{- if $p.notReady }}
not_ready = {{ toJson $p.notReady }}
{{- end }}
{{- if hasKey $p "waitOnRestart" }}
wait_on_restart = {{ include "nri-grpc.tomlValue" $p.waitOnRestart }}
{{- end }}
{{- if $p.selectors }}
selectors = [{{ range $j, $s := $p.selectors }}{{ if $j }}, {{ end }}{{ include "nri-grpc.selector" $s }}{{ end }}]
{{- end }}
{{- end }}
{{- with .Values.config.rawConfig }}

{{ . }}
{{- end }}
{{- end -}}
