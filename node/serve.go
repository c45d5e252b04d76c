package node

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/nri-grpc/nri-grpc/internal/metrics"
	"github.com/nri-grpc/nri-grpc/internal/probe"
)

// ErrStopped is Serve's error on a node that Stop stopped.
var ErrStopped = errors.New("node: stopped")

// Serve serves the gRPC endpoints on l.Unix and l.TCP, and the metrics and
// HTTP health probes (/readyz, /livez) on l.Metrics, and keeps the
// per-plugin health services (PluginHealthPrefix) in step with the
// plugins. A listener that is nil is not served; l.TCP and l.Metrics are
// served only if the configuration names them (Listen opens what it
// names). On a stopped node Serve closes l and returns ErrStopped.
// Serve returns nil when ctx ends and the error of the first
// listener that fails: either way the endpoints go on serving until Stop,
// so that the stop is graceful (Stop closes the listeners). Serve is
// called once.
func (n *Node) Serve(ctx context.Context, l Listeners) error {
	errc := make(chan error, 3) // one per listener
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		_ = l.Close()
		return ErrStopped
	}
	if n.served {
		n.mu.Unlock()
		return errors.New("node: Serve called twice")
	}
	n.served = true
	bg, end := context.WithCancel(context.Background())
	n.endServe = end
	if l.Unix != nil {
		n.serving.Go(func() { errc <- serveGRPC(n.unix, l.Unix) })
	}
	if n.tcp != nil && l.TCP != nil {
		n.serving.Go(func() { errc <- serveGRPC(n.tcp, l.TCP) })
	}
	if n.mx != nil && l.Metrics != nil {
		n.serving.Go(func() {
			// Until Stop ends bg, after the gRPC servers: the metrics of
			// the stop are still served.
			errc <- n.mx.ServeListener(bg, l.Metrics,
				metrics.WithHandler("/readyz", probe.Readiness(n.health)),
				metrics.WithHandler("/livez", probe.Liveness(n.health)))
		})
	}
	n.serving.Go(func() { n.watchPluginHealth(bg) })
	n.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if err != nil {
				return err
			}
		}
	}
}

// serveGRPC serves g on l until g stops.
func serveGRPC(g *grpc.Server, l net.Listener) error {
	if err := g.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// Stop stops the node gracefully, bounded by ctx: health goes NOT_SERVING
// and its Watch streams end, the plugins get Shutdown (server.Shutdown),
// the stop hooks run (WithStopHook), then the gRPC servers stop gracefully
// and whatever still runs when ctx ends is cut; last the metrics endpoint
// stops and the traces are flushed (within a second). Stop may be called
// without Serve (after a failed start) and more than once: every call
// returns once the first one is done, everything Serve started has ended.
func (n *Node) Stop(ctx context.Context) {
	n.mu.Lock()
	first := !n.stopped
	n.stopped = true
	n.mu.Unlock()
	if !first {
		<-n.stopDone
		return
	}
	defer close(n.stopDone)
	// NOT_SERVING, and the Watch streams end: the graceful stop below
	// would wait for them.
	n.health.end()
	if err := n.srv.Shutdown(ctx); err != nil {
		n.log.Warn("plugins did not all shut down in time", "error", err)
	}
	for _, fn := range n.o.stopHooks {
		fn(ctx)
	}
	var wg sync.WaitGroup
	wg.Go(n.unix.GracefulStop)
	if n.tcp != nil {
		wg.Go(n.tcp.GracefulStop)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		n.log.Warn("calls still running at the stop bound; cutting them")
		if n.tcp != nil {
			n.tcp.Stop()
		}
		n.unix.Stop()
		<-done
	}
	n.mu.Lock()
	end := n.endServe
	n.mu.Unlock()
	if end != nil {
		end()
	}
	n.serving.Wait()
	shCtx, shCancel := context.WithTimeout(context.Background(), time.Second)
	defer shCancel()
	if err := n.tracer.Shutdown(shCtx); err != nil {
		n.log.Warn("flushing traces", "error", err)
	}
}
