package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
	"github.com/nri-grpc/nri-grpc/nri"
)

// Sides of the isolation scenario.
const (
	sideHealthy = "healthy"
	sideHostile = "hostile"
)

// isolationTarget is the most a misbehaving plugin may add to the p99 of
// events it does not handle.
const isolationTarget = 10 * time.Millisecond

// isolation: CreateContainer with two healthy plugin processes, alone and
// beside misbehaving plugins that do not subscribe to it: one hanging in
// its registration's Synchronize (pending, with a long synchronization
// budget), one registered that hangs on every event it gets, and one
// re-registering in a loop (each registration takes the registration cut).
// What the misbehaving plugins add to the p99 is what they cost events
// they do not handle.
func (b *bencher) isolation() error {
	for run := 0; run < b.cfg.Runs; run++ {
		for _, side := range []string{sideHealthy, sideHostile} {
			b.logf("isolation run %d/%d: %s", run+1, b.cfg.Runs, side)
			if err := b.isolationRun(run, side == sideHostile); err != nil {
				return fmt.Errorf("isolation, %s, run %d: %w", side, run+1, err)
			}
		}
	}
	return nil
}

func (b *bencher) isolationRun(run int, hostile bool) error {
	side := sideHealthy
	if hostile {
		side = sideHostile
	}
	e, err := b.env("isolation-"+side, run)
	if err != nil {
		return err
	}
	defer e.close()
	rt, err := newGRPCRT(e, nil, nil, false)
	if err != nil {
		return err
	}
	defer rt.close()
	const k = 2
	if err := rt.addPlugins(k, maskCreate); err != nil {
		return err
	}
	if hostile {
		h, err := startHostile(rt.sock, rt.pluginDir)
		if err != nil {
			return err
		}
		defer h.stop()
	}
	return b.measureCreates(e, rt, k, b.sz.createSeq[3], scIsolation, side)
}

// hostile is the set of misbehaving plugins, run in the driver (they cost
// no CPU while they hang; the re-registration loop costs the driver some).
type hostile struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	stops  []func()
}

// maskOther is an event the benchmark's load never sends.
var maskOther = nri.EventMask(nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX)

func startHostile(sock, dir string) (*hostile, error) {
	ctx, cancel := context.WithCancel(context.Background())
	h := &hostile{cancel: cancel}
	// Registered, hanging on every event it gets (none of the load's).
	hung := &badPlugin{name: "hung", idx: "05", hangEvents: true}
	if err := h.register(ctx, sock, dir, hung, true); err != nil {
		h.stop()
		return nil, err
	}
	// Pending for good: its Synchronize hangs (a minute's budget, then it
	// registers again).
	h.loop(ctx, func() error {
		return h.register(ctx, sock, dir, &badPlugin{name: "stuck", idx: "06", hangSync: true}, false)
	})
	// Re-registering in a loop, at nrid's default rate limit for one
	// identity (register_rate = 5 per second): each registration takes the
	// registration cut.
	tick := time.NewTicker(200 * time.Millisecond)
	h.stops = append(h.stops, tick.Stop)
	h.loop(ctx, func() error {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		p := &badPlugin{name: "churn", idx: "07"}
		err := h.register(ctx, sock, dir, p, true)
		p.close()
		return err
	})
	return h, nil
}

// loop runs f until ctx ends.
func (h *hostile) loop(ctx context.Context, f func() error) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for ctx.Err() == nil {
			_ = f()
		}
	}()
}

// register serves p and registers it; with wait, it returns once the
// registration was answered, else when ctx ends or the session does.
func (h *hostile) register(ctx context.Context, sock, dir string, p *badPlugin, wait bool) error {
	if err := p.serve(dir); err != nil {
		return err
	}
	h.mu.Lock()
	h.stops = append(h.stops, p.close)
	h.mu.Unlock()
	cc, err := grpc.NewClient("unix://"+sock, append(flowctl.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())...)
	if err != nil {
		return err
	}
	defer cc.Close()
	req := &nriv1beta1.RegisterPluginRequest{PluginName: p.name, PluginIdx: p.idx, Endpoint: "unix://" + p.sock, NriVersion: "bench-hostile"}
	if p.hangSync {
		req.Timeouts = &nriv1beta1.Timeouts{Synchronize: durationpb.New(time.Minute)}
	}
	stream, err := nriv1beta1.NewRuntimeServiceClient(cc).RegisterPlugin(ctx, req)
	if err != nil {
		return err
	}
	if _, err := stream.Recv(); err != nil {
		return err
	}
	if wait {
		return nil
	}
	_, err = stream.Recv() // until the session or ctx ends
	return err
}

func (h *hostile) stop() {
	h.cancel()
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.stops {
		s()
	}
	h.stops = nil
}

// badPlugin is a PluginService that misbehaves as configured.
type badPlugin struct {
	nriv1beta1.UnimplementedPluginServiceServer
	name, idx  string
	hangSync   bool // Synchronize never answers
	hangEvents bool // every event hangs until the call ends

	sock string
	srv  *grpc.Server
	once sync.Once
}

func (p *badPlugin) serve(dir string) error {
	p.sock = filepath.Join(dir, fmt.Sprintf("%s-%s-%d.sock", p.idx, p.name, time.Now().UnixNano()%1e9))
	_ = os.Remove(p.sock)
	lis, err := net.Listen("unix", p.sock)
	if err != nil {
		return err
	}
	p.srv = grpc.NewServer(append(flowctl.ServerOptions(), codec.ServerOption())...)
	nriv1beta1.RegisterPluginServiceServer(p.srv, p)
	go func() { _ = p.srv.Serve(lis) }()
	return nil
}

func (p *badPlugin) close() {
	p.once.Do(func() {
		if p.srv != nil {
			p.srv.Stop()
		}
		_ = os.Remove(p.sock)
	})
}

// Configure subscribes to an event the load never sends.
func (p *badPlugin) Configure(context.Context, *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	return &nriv1beta1.ConfigureResponse{Events: int32(maskOther)}, nil
}

// Synchronize answers at once, or never when hangSync is set.
func (p *badPlugin) Synchronize(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	if p.hangSync {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &nriv1beta1.SynchronizeResponse{More: req.GetMore()}, nil
}

// Shutdown is accepted.
func (p *badPlugin) Shutdown(context.Context, *nriv1beta1.ShutdownRequest) (*nriv1beta1.ShutdownResponse, error) {
	return &nriv1beta1.ShutdownResponse{}, nil
}

// PostUpdatePodSandbox, its only event, hangs when hangEvents is set.
func (p *badPlugin) PostUpdatePodSandbox(ctx context.Context, _ *nriv1beta1.PostUpdatePodSandboxRequest) (*nriv1beta1.PostUpdatePodSandboxResponse, error) {
	if p.hangEvents {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &nriv1beta1.PostUpdatePodSandboxResponse{}, nil
}

// errNotMeasured marks a missing measurement in the isolation report.
var errNotMeasured = errors.New("not measured")

// isolationAdded returns the p99 the hostile side adds for config.
func (r *results) isolationAdded(config string) (time.Duration, error) {
	h, ok1 := r.median(key{scIsolation, config, sideHealthy}, mP99)
	x, ok2 := r.median(key{scIsolation, config, sideHostile}, mP99)
	if !ok1 || !ok2 {
		return 0, errNotMeasured
	}
	return time.Duration((x - h) * float64(time.Second)), nil
}
