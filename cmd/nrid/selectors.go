package main

import (
	"log/slog"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
)

// rosterSelector is an event selector as the roster (plugins.json) keeps
// it.
type rosterSelector struct {
	Namespaces      []string `json:"namespaces,omitempty"`
	PodLabels       string   `json:"pod_labels,omitempty"`
	ContainerNames  []string `json:"container_names,omitempty"`
	RuntimeHandlers []string `json:"runtime_handlers,omitempty"`
}

func toRoster(sels []*nriv1beta1.EventSelector) []rosterSelector {
	if len(sels) == 0 {
		return nil
	}
	out := make([]rosterSelector, len(sels))
	for i, s := range sels {
		out[i] = rosterSelector{Namespaces: s.GetNamespaces(), PodLabels: s.GetPodLabels(),
			ContainerNames: s.GetContainerNames(), RuntimeHandlers: s.GetRuntimeHandlers()}
	}
	return out
}

func fromRoster(sels []rosterSelector) []*nriv1beta1.EventSelector {
	out := make([]*nriv1beta1.EventSelector, len(sels))
	for i, s := range sels {
		out[i] = &nriv1beta1.EventSelector{Namespaces: s.Namespaces, PodLabels: s.PodLabels,
			ContainerNames: s.ContainerNames, RuntimeHandlers: s.RuntimeHandlers}
	}
	return out
}

// rememberSelectors tells the server the selectors the plugins of the
// previous nrid had (server.RememberSelectors), so that while one of them
// is absent, the restart gate's hold, a requirement carried over
// (RequireUntilRegistered) and the operator's required plugins apply only
// to what it selected. Entries without selectors (everything) and invalid
// ones (logged; the file is nrid's own, but not trusted blindly) are left
// out: an unknown plugin is required for everything. The [[plugin]]
// entries' selectors (node.RememberSelectors) come after, and so win.
func rememberSelectors(srv *server.Server, gate []rosterEntry, log *slog.Logger) {
	for _, e := range gate {
		if len(e.Selectors) == 0 {
			continue
		}
		if err := srv.RememberSelectors(e.Plugin, fromRoster(e.Selectors)); err != nil {
			log.Warn("restart gate: ignoring the remembered selectors of a plugin", "plugin", e.Plugin, "error", err)
		}
	}
}
