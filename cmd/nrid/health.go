package main

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// errStopping ends the health Watch streams open when nrid stops:
// UNAVAILABLE, so that a watcher reconnects (after a takeover, to the new
// nrid on the same socket).
var errStopping = status.Error(codes.Unavailable, "nrid is stopping")

// stoppingHealth is the grpc.health.v1 service nrid serves: grpc-go's
// health server, whose Watch streams end when nrid stops (end). grpc-go's
// own Watch returns only when its stream's context ends, and a graceful
// stop waits for every open stream: one watcher would hold every stop, and
// a takeover, for the whole stop bound.
type stoppingHealth struct {
	*health.Server

	once    sync.Once
	stopped chan struct{}
}

func newStoppingHealth(s *health.Server) *stoppingHealth {
	return &stoppingHealth{Server: s, stopped: make(chan struct{})}
}

// end sets every service NOT_SERVING (health.Server.Shutdown) and ends
// the Watch streams, each after a last NOT_SERVING, with errStopping.
func (h *stoppingHealth) end() {
	h.once.Do(func() {
		h.Shutdown()
		close(h.stopped)
	})
}

// Watch serves the health server's Watch until the stream ends or nrid
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
	return errStopping
}

// watchStream is a Watch stream whose context also ends when nrid stops,
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
