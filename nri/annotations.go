package nri

// EffectiveAnnotation returns the value of the annotation key that applies
// to the container named ctrName, and whether there is one. The most
// specific form wins:
//
//  1. <key>/container.<ctrName> (this container only),
//  2. <key>/pod (every container of the pod),
//  3. <key> (every container of the pod).
//
// This is classic NRI's GetEffectiveAnnotation, over a plain map so that it
// applies to any annotations (usually the pod's).
func EffectiveAnnotation(annotations map[string]string, key, ctrName string) (string, bool) {
	if len(annotations) == 0 {
		return "", false
	}
	for _, k := range [...]string{key + "/container." + ctrName, key + "/pod", key} {
		if v, ok := annotations[k]; ok {
			return v, true
		}
	}
	return "", false
}
