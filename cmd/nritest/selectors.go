package main

import (
	"strings"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// A plugin that declares event selectors receives only the events of the
// pods they select, and only their state in Synchronize. nritest shapes
// its event pods after the plugin's first selector, so that its events
// reach the plugin: the first namespace and runtime handler, labels that
// satisfy the label selector, a container name the first pattern matches.

// applySelector shapes pod and ctr to match sel.
func applySelector(sel *nriv1beta1.EventSelector, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) {
	if sel == nil {
		return
	}
	if ns := sel.GetNamespaces(); len(ns) > 0 {
		pod.Namespace = ns[0]
	}
	if rh := sel.GetRuntimeHandlers(); len(rh) > 0 {
		pod.RuntimeHandler = rh[0]
	}
	for k, v := range labelsFor(sel.GetPodLabels()) {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[k] = v
	}
	if names := sel.GetContainerNames(); len(names) > 0 && ctr != nil {
		name := strings.NewReplacer("*", "", "?", "x").Replace(names[0])
		if name == "" {
			name = "app"
		}
		ctr.Name = name
	}
}

// labelsFor returns labels that satisfy a Kubernetes label selector
// ("app=web,tier in (a,b),!canary"): equality and set membership set the
// label, existence sets it to "nritest"; inequality, notin and !exists
// hold when the label is absent.
func labelsFor(selector string) map[string]string {
	out := map[string]string{}
	for _, req := range splitTop(selector) {
		req = strings.TrimSpace(req)
		switch {
		case req == "", strings.HasPrefix(req, "!"), strings.Contains(req, "!="), strings.Contains(req, " notin "):
		case strings.Contains(req, " in "):
			k, set, _ := strings.Cut(req, " in ")
			vals := strings.Split(strings.Trim(strings.TrimSpace(set), "()"), ",")
			out[strings.TrimSpace(k)] = strings.TrimSpace(vals[0])
		case strings.Contains(req, "=="):
			k, v, _ := strings.Cut(req, "==")
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		case strings.Contains(req, "="):
			k, v, _ := strings.Cut(req, "=")
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		default:
			out[req] = "nritest"
		}
	}
	return out
}

// splitTop splits s at the commas outside parentheses.
func splitTop(s string) []string {
	var (
		out   []string
		depth int
		start int
	)
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
