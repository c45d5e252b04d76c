package server

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Deprecation kinds recorded by the server and the bridge.
const (
	// DeprecationStateChange: a classic plugin only implements the legacy
	// StateChange multiplexer for an event that has its own RPC in v1beta1.
	DeprecationStateChange = "StateChange"
)

// deprecations remembers the deprecated behaviours seen from plugins, for
// AdminService.ListDeprecations: one entry per plugin, kind and event, with
// when it was first seen and how often. Its zero value is ready to use.
type deprecations struct {
	mu      sync.Mutex
	entries map[deprecationKey]*deprecationEntry
}

type deprecationKey struct {
	plugin string // "NN-name"
	kind   string
	event  nriv1beta1.Event
}

type deprecationEntry struct {
	plugin  *nriv1beta1.PluginInstance
	details string
	first   time.Time
	count   uint64
}

// deprecationStore returns the server's deprecation store.
func (s *Server) deprecationStore() *deprecations { return &s.deprecations }

// RecordDeprecation records that plugin showed a deprecated behaviour: kind
// names it (for example DeprecationStateChange), event is the event
// concerned (EVENT_UNSPECIFIED when none), details say what a human should
// know ("does not implement a dedicated StartContainer RPC"). The first
// occurrence per plugin, kind and event is logged; later ones are only
// counted. Safe for concurrent use, and cheap enough for the dispatch path.
func (s *Server) RecordDeprecation(plugin *nriv1beta1.PluginInstance, kind string, event nriv1beta1.Event, details string) {
	full := plugin.GetIndex() + "-" + plugin.GetName()
	s.opts.metrics.Deprecation(full, kind)
	if first := s.deprecationStore().record(full, plugin, kind, event, details); first {
		s.log.Warn("deprecated plugin behaviour", "plugin", full, "kind", kind, "event", event.String(), "details", details)
		if s.opts.deprecationHook != nil {
			s.opts.deprecationHook(full, kind, event, details)
		}
	}
}

// Deprecations lists the deprecated behaviours seen so far, ordered by
// plugin, kind and event.
func (s *Server) Deprecations() []*nriv1beta1.Deprecation {
	return s.deprecationStore().list()
}

// record counts one occurrence and reports whether it was the first.
func (d *deprecations) record(full string, plugin *nriv1beta1.PluginInstance, kind string, event nriv1beta1.Event, details string) bool {
	k := deprecationKey{plugin: full, kind: kind, event: event}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.entries[k]; ok {
		e.count++
		return false
	}
	if d.entries == nil {
		d.entries = map[deprecationKey]*deprecationEntry{}
	}
	d.entries[k] = &deprecationEntry{
		plugin:  &nriv1beta1.PluginInstance{Name: plugin.GetName(), Index: plugin.GetIndex()},
		details: details,
		first:   time.Now(),
		count:   1,
	}
	return true
}

func (d *deprecations) list() []*nriv1beta1.Deprecation {
	type row struct {
		k deprecationKey
		e deprecationEntry
	}
	d.mu.Lock()
	rows := make([]row, 0, len(d.entries))
	for k, e := range d.entries {
		rows = append(rows, row{k, *e})
	}
	d.mu.Unlock()
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.k.plugin, b.k.plugin), cmp.Compare(a.k.kind, b.k.kind), cmp.Compare(a.k.event, b.k.event))
	})
	out := make([]*nriv1beta1.Deprecation, 0, len(rows))
	for _, r := range rows {
		out = append(out, &nriv1beta1.Deprecation{
			Plugin:    r.e.plugin.CloneVT(),
			Kind:      r.k.kind,
			Event:     r.k.event,
			Details:   r.e.details,
			FirstSeen: timestamppb.New(r.e.first),
			Count:     r.e.count,
		})
	}
	return out
}
