package server

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
)

// Redacted is what AdminService shows instead of an env or annotation
// value while redaction is on.
const Redacted = "<redacted>"

const (
	// defaultWatchBuffer is how many records a watcher may fall behind
	// before it loses records.
	defaultWatchBuffer = 256
	// statePageBytes is the most a GetState page's pods and containers take
	// when encoded: well under the 4 MiB a gRPC client accepts by default.
	statePageBytes = 1 << 20
)

// AdminOption configures the AdminService; it has the shape of Option.
type AdminOption func(*adminOptions)

type adminOptions struct {
	redact      bool
	watchBuffer int
}

// WithoutRedaction shows env and annotation values in AdminService answers
// (they are replaced by Redacted by default).
func WithoutRedaction() AdminOption { return func(o *adminOptions) { o.redact = false } }

// WithWatchBuffer sets how many dispatch records a WatchEvents caller may
// fall behind before it loses records (default 256; less than 1 means 1).
// A slow watcher never slows dispatch down: it loses records instead.
func WithWatchBuffer(n int) AdminOption {
	return func(o *adminOptions) { o.watchBuffer = n }
}

// AdminService returns the gRPC AdminService of the server: the operator's
// view of plugins, cached state, deprecations and live dispatch records, and
// dry runs. Serve it only to callers with the admin grant. Env and annotation
// values are redacted in every answer unless WithoutRedaction is given. The
// service works on copies: the server's cached objects are never modified.
func (s *Server) AdminService(opts ...AdminOption) nriv1beta1.AdminServiceServer {
	o := adminOptions{redact: true, watchBuffer: defaultWatchBuffer}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	o.watchBuffer = max(o.watchBuffer, 1)
	return &adminService{s: s, o: o}
}

type adminService struct {
	nriv1beta1.UnimplementedAdminServiceServer
	s *Server
	o adminOptions
}

// ListPlugins implements AdminService.
func (a *adminService) ListPlugins(context.Context, *nriv1beta1.ListPluginsRequest) (*nriv1beta1.ListPluginsResponse, error) {
	infos := a.s.Plugins()
	out := &nriv1beta1.ListPluginsResponse{Plugins: make([]*nriv1beta1.PluginInfo, 0, len(infos))}
	for _, info := range infos {
		// PluginInfo shares the plugin's granted capabilities and policy.
		out.Plugins = append(out.Plugins, info.CloneVT())
	}
	return out, nil
}

// GetState implements AdminService: the cached pods, then the cached
// containers, sorted by id, in pages of at most statePageBytes.
func (a *adminService) GetState(req *nriv1beta1.GetStateRequest, stream grpc.ServerStreamingServer[nriv1beta1.GetStateResponse]) error {
	pods, ctrs := a.s.state.snapshot()
	if id := req.GetPodId(); id != "" {
		pods = filter(pods, func(p *nriv1beta1.PodSandbox) bool { return p.GetId() == id })
		ctrs = filter(ctrs, func(c *nriv1beta1.Container) bool { return c.GetPodSandboxId() == id })
		if len(pods) == 0 && len(ctrs) == 0 {
			return status.Errorf(codes.NotFound, "pod_id: no pod %q in the server's state", id)
		}
	}
	var (
		page = &nriv1beta1.GetStateResponse{}
		size int
		sent bool
	)
	flush := func() error {
		sent = true
		err := stream.Send(page)
		page, size = &nriv1beta1.GetStateResponse{}, 0
		return err
	}
	// add makes room for an element of n encoded bytes.
	add := func(n int) error {
		elem := 1 + protowire.SizeVarint(uint64(n)) + n
		if size > 0 && size+elem > statePageBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		size += elem
		return nil
	}
	for _, p := range pods {
		if a.o.redact {
			p = p.CloneVT()
			redactPod(p)
		}
		if err := add(p.SizeVT()); err != nil {
			return err
		}
		page.Pods = append(page.Pods, p)
	}
	for _, c := range ctrs {
		if a.o.redact {
			c = c.CloneVT()
			redactContainer(c)
		}
		if err := add(c.SizeVT()); err != nil {
			return err
		}
		page.Containers = append(page.Containers, c)
	}
	if size > 0 || !sent {
		return flush()
	}
	return nil
}

func filter[T any](in []T, keep func(T) bool) []T {
	var out []T
	for _, x := range in {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// ListDeprecations implements AdminService.
func (a *adminService) ListDeprecations(context.Context, *nriv1beta1.ListDeprecationsRequest) (*nriv1beta1.ListDeprecationsResponse, error) {
	return &nriv1beta1.ListDeprecationsResponse{Deprecations: a.s.Deprecations()}, nil
}

// WatchEvents implements AdminService: it streams the dispatch records
// that pass the request's filters until the client goes away. Records are
// taken off the dispatch path without ever blocking it: a watcher that
// falls more than the watch buffer behind loses records (gaps in
// DispatchRecord.sequence show it when nothing is filtered).
func (a *adminService) WatchEvents(req *nriv1beta1.WatchEventsRequest, stream grpc.ServerStreamingServer[nriv1beta1.WatchEventsResponse]) error {
	match, err := watchFilter(req)
	if err != nil {
		return err
	}
	ctx := stream.Context()
	ch := make(chan *nriv1beta1.DispatchRecord, a.o.watchBuffer)
	var dropped atomic.Uint64
	cancel := a.s.Watch(a.o.watchBuffer, func(rec *nriv1beta1.DispatchRecord) {
		if !match(rec) {
			return
		}
		select {
		case ch <- rec:
		default:
			dropped.Add(1)
		}
	})
	defer func() {
		cancel()
		if n := dropped.Load(); n > 0 {
			a.s.log.Info("admin: slow event watcher lost records", "dropped", n)
		}
	}()
	if err := stream.SendHeader(metadata.Pairs(nri.MetadataWatch, "started")); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-a.s.stopping:
			return status.Error(codes.Unavailable, "the server is stopping")
		case rec := <-ch:
			// The record is shared with the other watchers.
			out := rec.CloneVT()
			if a.o.redact {
				redactRecord(out)
			}
			if err := stream.Send(&nriv1beta1.WatchEventsResponse{Record: out}); err != nil {
				return err
			}
		}
	}
}

// watchFilter checks a WatchEventsRequest and returns its filter.
func watchFilter(req *nriv1beta1.WatchEventsRequest) (func(*nriv1beta1.DispatchRecord) bool, error) {
	var events uint64
	for i, e := range req.GetEvents() {
		if e <= nriv1beta1.Event_EVENT_UNSPECIFIED || e >= nriv1beta1.Event_EVENT_LAST {
			return nil, invalid(fmt.Sprintf("events[%d]", i), "%d is not an event", int32(e))
		}
		events |= 1 << uint(e)
	}
	plugin, pod := req.GetPlugin(), req.GetPodId()
	return func(rec *nriv1beta1.DispatchRecord) bool {
		if events != 0 && events&(1<<uint(rec.GetEvent())) == 0 {
			return false
		}
		if pod != "" && rec.GetPodId() != pod {
			return false
		}
		if plugin != "" {
			for _, c := range rec.GetCalls() {
				p := c.GetPlugin()
				if p.GetName() == plugin || p.GetIndex()+"-"+p.GetName() == plugin {
					return true
				}
			}
			return false
		}
		return true
	}, nil
}

// DryRun implements AdminService.
func (a *adminService) DryRun(ctx context.Context, req *nriv1beta1.DryRunRequest) (*nriv1beta1.DryRunResponse, error) {
	rsp, err := a.s.DryRun(ctx, req)
	if err != nil {
		return nil, err
	}
	if a.o.redact {
		rsp = rsp.CloneVT()
		redactAdjustment(rsp.Adjust)
		redactRecord(rsp.Record)
	}
	return rsp, nil
}

// checkSimulation enforces DESIGN §5.10 for AdaptationService calls: a call
// marked as simulated (metadata nri.MetadataSimulate: "1", as nrictl simulate
// sends it) is refused with FAILED_PRECONDITION while a runtime is attached.
// Unmarked calls, and simulated calls without a runtime, pass.
func (s *Server) checkSimulation(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	simulated := false
	for _, v := range md.Get(nri.MetadataSimulate) {
		if v == "1" || strings.EqualFold(v, "true") {
			simulated = true
		}
	}
	if !simulated {
		return nil
	}
	select {
	case <-s.RuntimeAttached():
		_, info := s.runtime()
		return status.Errorf(codes.FailedPrecondition,
			"simulated lifecycles are refused while a runtime is attached (runtime %q); use DryRun instead", info.Name)
	default:
		return nil
	}
}

// SimulationGuard returns a unary interceptor that applies checkSimulation
// to every AdaptationService call and lets every other call through.
func (s *Server) SimulationGuard() grpc.UnaryServerInterceptor {
	prefix := "/" + nriv1beta1.AdaptationService_ServiceDesc.ServiceName + "/"
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if strings.HasPrefix(info.FullMethod, prefix) {
			if err := s.checkSimulation(ctx); err != nil {
				return nil, err
			}
		}
		return handler(ctx, req)
	}
}

// Redaction: env values and annotation values are replaced by Redacted; the
// names and keys stay. The functions modify their argument: call them on
// copies only.

func redactPod(p *nriv1beta1.PodSandbox) {
	redactMap(p.GetAnnotations())
}

func redactContainer(c *nriv1beta1.Container) {
	if c == nil {
		return
	}
	redactMap(c.Annotations)
	redactEnv(c.Env)
	redactHooks(c.Hooks)
}

func redactAdjustment(a *nriv1beta1.ContainerAdjustment) {
	if a == nil {
		return
	}
	redactMap(a.Annotations)
	for _, kv := range a.Env {
		if !strings.HasPrefix(kv.GetKey(), "-") { // a removal marker has no value
			kv.Value = Redacted
		}
	}
	redactHooks(a.Hooks)
}

func redactRecord(r *nriv1beta1.DispatchRecord) {
	for _, c := range r.GetCalls() {
		for _, ch := range c.GetChanges() {
			switch ch.GetField() {
			case nriv1beta1.Field_FIELD_ENV, nriv1beta1.Field_FIELD_ANNOTATIONS:
				if !ch.GetRemoved() {
					ch.Value = Redacted
				}
			}
		}
	}
}

func redactMap(m map[string]string) {
	for k := range m {
		m[k] = Redacted
	}
}

// redactEnv redacts "NAME=value" entries to "NAME=<redacted>".
func redactEnv(env []string) {
	for i, e := range env {
		if j := strings.IndexByte(e, '='); j >= 0 {
			env[i] = e[:j+1] + Redacted
		}
	}
}

func redactHooks(h *nriv1beta1.Hooks) {
	if h == nil {
		return
	}
	for _, list := range [][]*nriv1beta1.Hook{h.Prestart, h.CreateRuntime, h.CreateContainer, h.StartContainer, h.Poststart, h.Poststop} {
		for _, hook := range list {
			redactEnv(hook.Env)
		}
	}
}
