// Package selector validates and compiles event selectors
// (nriv1beta1.EventSelector) and matches pods and containers against them.
//
// It is shared by the server, which filters events and Synchronize state
// by the selectors a plugin registered with, and by plugin SDKs and tools,
// which may check selectors before registering.
//
// # Matching
//
// A selector matches when every field that is set matches (AND); a list
// matches when any of its entries does (OR); an empty selector matches
// everything. A list of selectors (a [Set]) matches when any selector does;
// an empty list matches everything.
//
//   - namespaces: the pod's namespace, exactly.
//   - pod_labels: a Kubernetes label selector (see [ParseLabels]) on the
//     pod's labels.
//   - container_names: glob patterns on the container's name (see
//     [MatchName]). Pod events are matched on the pod only: container_names
//     does not filter them.
//   - runtime_handlers: the pod's runtime_handler, exactly ("" is the
//     runtime's default handler).
//
// # Bounds
//
// At most [MaxSelectors] selectors; each list at most [MaxEntries] entries
// of at most [MaxEntryLen] bytes; pod_labels at most [MaxLabelSelectorLen]
// bytes; every string valid UTF-8. Errors ([*Error]) name the field path
// ("selectors[1].pod_labels") and the rule, and quote at most a short
// prefix of the bad input.
package selector
