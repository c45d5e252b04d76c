package bridge_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/net/multiplex"
	"github.com/containerd/ttrpc"

	"github.com/nri-grpc/nri-grpc/bridge"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
)

// registrar is the Runtime service of a hand-driven classic runtime.
type registrar struct {
	reg chan *v1alpha1.RegisterPluginRequest
}

func (r *registrar) RegisterPlugin(_ context.Context, req *v1alpha1.RegisterPluginRequest) (*v1alpha1.Empty, error) {
	r.reg <- req
	return &v1alpha1.Empty{}, nil
}

func (r *registrar) UpdateContainers(context.Context, *v1alpha1.UpdateContainersRequest) (*v1alpha1.UpdateContainersResponse, error) {
	return &v1alpha1.UpdateContainersResponse{}, nil
}

// TestOlderRuntimePagedSyncAndStateChange drives the bridge's runtime side
// by hand through the upstream transport (the multiplexer and ttrpc of
// github.com/containerd/nri), with what pkg/adaptation v0.12 does not send
// in the other tests: a Synchronize in two pages, and a lifecycle
// notification as the legacy StateChange of older runtimes.
func TestOlderRuntimePagedSyncAndStateChange(t *testing.T) {
	n := startNrid(t)
	n.grpcPlugin(t, "10", "watch", func(p *testplugin.Plugin) {
		p.Events = 1 << uint(nriv1beta1.Event_EVENT_START_CONTAINER-1)
		p.Capabilities = &nriv1beta1.Capabilities{Resync: true}
	})

	sock := filepath.Join(tempDir(t), "nri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	rs, err := bridge.NewRuntimeSide(n.srv, bridge.WithRuntimeSocket(sock), bridge.WithRuntimeLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = rs.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	conn, err := lis.Accept()
	if err != nil {
		t.Fatal(err)
	}
	// Blocked until both conns are set up, as pkg/adaptation does: the
	// multiplexer drops frames for a conn nobody listens on yet, and the
	// bridge sends RegisterPlugin as soon as it is connected (on a loaded
	// machine it arrived before Listen, was dropped, and the bridge's
	// reconnection found nobody accepting: the test hung).
	mux := multiplex.Multiplex(conn, multiplex.WithBlockedRead())
	defer mux.Close()
	rl, err := mux.Listen(multiplex.RuntimeServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ttrpc.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	reg := &registrar{reg: make(chan *v1alpha1.RegisterPluginRequest, 1)}
	v1alpha1.RegisterRuntimeService(srv, reg)
	go func() { _ = srv.Serve(ctx, rl) }()
	defer srv.Close()
	pc, err := mux.Open(multiplex.PluginServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	client := ttrpc.NewClient(pc)
	defer client.Close()
	plugin := v1alpha1.NewPluginClient(client)
	mux.Unblock()

	select {
	case r := <-reg.reg:
		if r.GetPluginName() != bridge.DefaultPluginName || r.GetPluginIdx() != bridge.DefaultPluginIndex {
			t.Fatalf("registered as %s-%s", r.GetPluginIdx(), r.GetPluginName())
		}
	case <-ctx.Done():
		t.Fatal("the bridge did not register")
	}
	cfg, err := plugin.Configure(ctx, &v1alpha1.ConfigureRequest{RuntimeName: "old-runtime", RuntimeVersion: "v0.1", RequestTimeout: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if mask := v1alpha1.EventMask(cfg.GetEvents()); !mask.IsSet(v1alpha1.Event_START_CONTAINER) {
		t.Fatalf("subscribed to %v, not StartContainer", mask.PrettyString())
	}

	pod, c0, c1 := alphaPod(1), alphaCtr(1, 0), alphaCtr(1, 1)
	first, err := plugin.Synchronize(ctx, &v1alpha1.SynchronizeRequest{Pods: []*v1alpha1.PodSandbox{pod}, Containers: []*v1alpha1.Container{c0}, More: true})
	if err != nil || !first.GetMore() {
		t.Fatalf("first page: more %v, %v (want the echo)", first.GetMore(), err)
	}
	if _, err := plugin.Synchronize(ctx, &v1alpha1.SynchronizeRequest{Containers: []*v1alpha1.Container{c1}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rs.Synchronized():
	case <-ctx.Done():
		t.Fatal("the bridge did not report the synchronization")
	}
	// The plugin's resynchronization carries both pages.
	if err := n.log.Wait(ctx, func(calls []testplugin.Call) bool {
		for _, c := range calls {
			if s, ok := c.Req.(*nriv1beta1.SynchronizeRequest); ok && s.GetEpoch() > 0 && len(s.GetContainers()) == 2 && len(s.GetPods()) == 1 {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no resynchronization with both pages' containers: %v", n.log.Strings())
	}

	if _, err := plugin.StateChange(ctx, &v1alpha1.StateChangeEvent{Event: v1alpha1.Event_START_CONTAINER, Pod: pod, Container: c1}); err != nil {
		t.Fatal(err)
	}
	if err := n.log.Wait(ctx, func(calls []testplugin.Call) bool {
		for _, c := range calls {
			if s, ok := c.Req.(*nriv1beta1.StartContainerRequest); ok && s.GetContainer().GetId() == c1.GetId() && s.GetPod().GetId() == pod.GetId() {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("StateChange(START_CONTAINER) did not reach the plugin as StartContainer: %v", n.log.Strings())
	}
}
