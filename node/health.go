package node

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// stoppingHealth is the grpc.health.v1 service a node serves: grpc-go's
// health server, whose Watch streams end when the node stops (end).
// grpc-go's own Watch returns only when its stream's context ends, and a
// graceful stop waits for every open stream: one watcher would hold every
// stop, and a takeover, for the whole stop bound.
type stoppingHealth struct {
	*health.Server

	// errStopping ends the health Watch streams open at the stop:
	// UNAVAILABLE, so that a watcher reconnects (after nrid's takeover, to
	// the new nrid on the same socket).
	errStopping error
	once        sync.Once
	stopped     chan struct{}
}

func newStoppingHealth(s *health.Server, stopping string) *stoppingHealth {
	return &stoppingHealth{Server: s, errStopping: status.Error(codes.Unavailable, stopping), stopped: make(chan struct{})}
}

// end sets every service NOT_SERVING (health.Server.Shutdown) and ends
// the Watch streams, each after a last NOT_SERVING, with errStopping.
func (h *stoppingHealth) end() {
	h.once.Do(func() {
		h.Shutdown()
		close(h.stopped)
	})
}

// Watch serves the health server's Watch until the stream ends or the node
// stops. At the stop the watcher gets the service's last status
// (NOT_SERVING, unless the service is unknown) if the health server's own
// update lost the race with the stop, then errStopping.
func (h *stoppingHealth) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	go func() {
		select {
		case <-h.stopped:
			cancel()
		case <-ctx.Done():
		}
	}()
	w := &watchStream{ServerStreamingServer: stream, ctx: ctx, last: -1}
	err := h.Server.Watch(req, w)
	select {
	case <-h.stopped:
	default:
		return err
	}
	if stream.Context().Err() != nil {
		return err // the watcher left
	}
	if rsp, cerr := h.Check(stream.Context(), req); cerr == nil && rsp.GetStatus() != w.last {
		if err := stream.Send(rsp); err != nil {
			return err
		}
	}
	return h.errStopping
}

// watchStream is a Watch stream whose context also ends when the node stops,
// and which remembers the last status sent.
type watchStream struct {
	grpc.ServerStreamingServer[healthpb.HealthCheckResponse]
	ctx  context.Context
	last healthpb.HealthCheckResponse_ServingStatus // -1: none yet
}

func (w *watchStream) Context() context.Context { return w.ctx }

func (w *watchStream) Send(r *healthpb.HealthCheckResponse) error {
	if err := w.ServerStreamingServer.Send(r); err != nil {
		return err
	}
	w.last = r.GetStatus()
	return nil
}

// SetServing sets the health status of the whole server ("") and of every
// service it serves to SERVING or NOT_SERVING. A node starts NOT_SERVING;
// after Stop, the status stays NOT_SERVING. The per-plugin services
// (PluginHealthPrefix) follow the plugins, not SetServing.
func (n *Node) SetServing(serving bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if serving {
		st = healthpb.HealthCheckResponse_SERVING
	}
	n.health.SetServingStatus("", st)
	if n.mx != nil {
		n.mx.Serving(serving)
	}
	for _, name := range n.services {
		n.health.SetServingStatus(name, st)
	}
}

// PluginHealthPrefix prefixes the gRPC health service name of each plugin:
// "nri.plugin/10-name" is SERVING while the plugin is registered and
// READY or DEGRADED, NOT_SERVING while it is NOT_READY, and
// SERVICE_UNKNOWN once it is gone. A plugin's status never changes the
// node's own health ("" and the services it serves).
const PluginHealthPrefix = "nri.plugin/"

// maxPluginHealth bounds the plugin names published in the health service
// (its entries are never removed, only set to SERVICE_UNKNOWN): names
// beyond it are not published.
const maxPluginHealth = 256

// watchPluginHealth keeps the per-plugin health services in step with the
// plugins' statuses until ctx ends.
func (n *Node) watchPluginHealth(ctx context.Context) {
	published := map[string]healthpb.HealthCheckResponse_ServingStatus{}
	for {
		changed := n.srv.StatusChanged()
		n.publishPluginHealth(published)
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// publishPluginHealth sets each plugin's health service from its status;
// published holds what was set before.
func (n *Node) publishPluginHealth(published map[string]healthpb.HealthCheckResponse_ServingStatus) {
	now := map[string]healthpb.HealthCheckResponse_ServingStatus{}
	for _, pi := range n.srv.Plugins() {
		if pi.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_CLOSING {
			continue
		}
		name := PluginHealthPrefix + pi.GetPlugin().GetIndex() + "-" + pi.GetPlugin().GetName()
		st := healthpb.HealthCheckResponse_SERVING
		if pi.GetStatus() == nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		// Of a current and a pending instance, the last listed (the
		// pending one, taking over) wins unless it is still configuring.
		if _, seen := now[name]; !seen || pi.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY {
			now[name] = st
		}
	}
	for name, st := range now {
		if old, ok := published[name]; ok && old == st {
			continue
		}
		if _, ok := published[name]; !ok && len(published) >= maxPluginHealth {
			continue
		}
		published[name] = st
		n.health.SetServingStatus(name, st)
	}
	for name, old := range published {
		if _, ok := now[name]; !ok && old != healthpb.HealthCheckResponse_SERVICE_UNKNOWN {
			published[name] = healthpb.HealthCheckResponse_SERVICE_UNKNOWN
			n.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVICE_UNKNOWN)
		}
	}
}
