package bridge

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/server"
)

// fakeClassic is a classic plugin built from the v1alpha1 descriptors: it
// decodes every request as its v1alpha1 message (with protobuf's
// reflection, as pkg/stub does), keeps the last one per method and answers
// what it was given.
type fakeClassic struct {
	mu            sync.Mutex
	got           map[string]proto.Message
	answer        map[string]proto.Message
	unimplemented map[string]bool
}

func (f *fakeClassic) serve(t testing.TB) *ttrpc.Client {
	t.Helper()
	methods := map[string]ttrpc.Method{}
	desc := v1alpha1.File_pkg_api_api_proto.Services().ByName("Plugin").Methods()
	for i := 0; i < desc.Len(); i++ {
		md := desc.Get(i)
		name := string(md.Name())
		in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
		if err != nil {
			t.Fatal(err)
		}
		out, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
		if err != nil {
			t.Fatal(err)
		}
		methods[name] = func(_ context.Context, unmarshal func(any) error) (any, error) {
			req := in.New().Interface()
			if err := unmarshal(req); err != nil {
				return nil, err
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			f.got[name] = req
			if f.unimplemented[name] {
				return nil, status.Error(codes.Unimplemented, name)
			}
			if a, ok := f.answer[name]; ok {
				return a, nil
			}
			return out.New().Interface(), nil
		}
	}
	srv, err := ttrpc.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	srv.RegisterService(classicPluginService, &ttrpc.ServiceDesc{Methods: methods})
	lis, err := net.Listen("unix", filepath.Join(t.TempDir(), "p.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(context.Background(), lis) }()
	conn, err := net.Dial("unix", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client := ttrpc.NewClient(conn)
	t.Cleanup(func() {
		_ = client.Close()
		_ = srv.Close()
	})
	return client
}

func (f *fakeClassic) last(method string) proto.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[method]
}

// classicCase is one method of a classic plugin called through classicConn.
type classicCase struct {
	method string
	// sent is the v1beta1 request as the old path converted it: only the
	// fields v1alpha1 has.
	sent vtMessage
	call func(ctx context.Context) (vtMessage, error)
}

func classicCases(cc *classicConn, f *filler) []classicCase {
	cfg := random(f, &nriv1beta1.ConfigureRequest{})
	sync := random(f, &nriv1beta1.SynchronizeRequest{})
	upod := random(f, &nriv1beta1.UpdatePodSandboxRequest{})
	create := random(f, &nriv1beta1.CreateContainerRequest{})
	update := random(f, &nriv1beta1.UpdateContainerRequest{})
	stop := random(f, &nriv1beta1.StopContainerRequest{})
	val := random(f, &nriv1beta1.ValidateContainerAdjustmentRequest{})
	return []classicCase{
		{"Configure", &nriv1beta1.ConfigureRequest{Config: cfg.Config, RuntimeName: cfg.RuntimeName, RuntimeVersion: cfg.RuntimeVersion,
			RegistrationTimeout: cfg.RegistrationTimeout, RequestTimeout: cfg.RequestTimeout, NriVersion: cfg.NriVersion},
			func(ctx context.Context) (vtMessage, error) { return cc.Configure(ctx, cfg) }},
		{"Synchronize", &nriv1beta1.SynchronizeRequest{Pods: sync.Pods, Containers: sync.Containers, More: sync.More},
			func(ctx context.Context) (vtMessage, error) { return cc.Synchronize(ctx, sync) }},
		{"UpdatePodSandbox", upod, func(ctx context.Context) (vtMessage, error) { return cc.UpdatePodSandbox(ctx, upod) }},
		{"CreateContainer", &nriv1beta1.CreateContainerRequest{Pod: create.Pod, Container: create.Container},
			func(ctx context.Context) (vtMessage, error) { return cc.CreateContainer(ctx, create) }},
		{"UpdateContainer", &nriv1beta1.UpdateContainerRequest{Pod: update.Pod, Container: update.Container, LinuxResources: update.LinuxResources},
			func(ctx context.Context) (vtMessage, error) { return cc.UpdateContainer(ctx, update) }},
		{"StopContainer", stop, func(ctx context.Context) (vtMessage, error) { return cc.StopContainer(ctx, stop) }},
		{"ValidateContainerAdjustment", &nriv1beta1.ValidateContainerAdjustmentRequest{Pod: val.Pod, Container: val.Container,
			Adjust: val.Adjust, Update: val.Update, Owners: val.Owners, Plugins: val.Plugins},
			func(ctx context.Context) (vtMessage, error) { return cc.ValidateContainerAdjustment(ctx, val) }},
	}
}

// notificationCase is one of the nine events older classic plugins only
// know as StateChange.
type notificationCase struct {
	event nriv1beta1.Event
	req   interface {
		vtMessage
		GetPod() *nriv1beta1.PodSandbox
	}
	call func(ctx context.Context) error
}

func notificationCases(cc *classicConn, f *filler) []notificationCase {
	pod := random(f, &nriv1beta1.PodSandbox{})
	ctr := random(f, &nriv1beta1.Container{})
	run := &nriv1beta1.RunPodSandboxRequest{Pod: pod}
	pup := &nriv1beta1.PostUpdatePodSandboxRequest{Pod: pod}
	spod := &nriv1beta1.StopPodSandboxRequest{Pod: pod}
	rpod := &nriv1beta1.RemovePodSandboxRequest{Pod: pod}
	pcr := &nriv1beta1.PostCreateContainerRequest{Pod: pod, Container: ctr}
	start := &nriv1beta1.StartContainerRequest{Pod: pod, Container: ctr}
	pst := &nriv1beta1.PostStartContainerRequest{Pod: pod, Container: ctr}
	pupc := &nriv1beta1.PostUpdateContainerRequest{Pod: pod, Container: ctr}
	rm := &nriv1beta1.RemoveContainerRequest{Pod: pod, Container: ctr}
	ignore := func(_ any, err error) error { return err }
	return []notificationCase{
		{nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, run, func(ctx context.Context) error { return ignore(cc.RunPodSandbox(ctx, run)) }},
		{nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX, pup, func(ctx context.Context) error { return ignore(cc.PostUpdatePodSandbox(ctx, pup)) }},
		{nriv1beta1.Event_EVENT_STOP_POD_SANDBOX, spod, func(ctx context.Context) error { return ignore(cc.StopPodSandbox(ctx, spod)) }},
		{nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX, rpod, func(ctx context.Context) error { return ignore(cc.RemovePodSandbox(ctx, rpod)) }},
		{nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER, pcr, func(ctx context.Context) error { return ignore(cc.PostCreateContainer(ctx, pcr)) }},
		{nriv1beta1.Event_EVENT_START_CONTAINER, start, func(ctx context.Context) error { return ignore(cc.StartContainer(ctx, start)) }},
		{nriv1beta1.Event_EVENT_POST_START_CONTAINER, pst, func(ctx context.Context) error { return ignore(cc.PostStartContainer(ctx, pst)) }},
		{nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER, pupc, func(ctx context.Context) error { return ignore(cc.PostUpdateContainer(ctx, pupc)) }},
		{nriv1beta1.Event_EVENT_REMOVE_CONTAINER, rm, func(ctx context.Context) error { return ignore(cc.RemoveContainer(ctx, rm)) }},
	}
}

// newFakeClassicConn returns a classicConn to a fakeClassic.
func newFakeClassicConn(t testing.TB) (*classicConn, *fakeClassic, *server.Server) {
	t.Helper()
	srv, err := server.New(server.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeClassic{got: map[string]proto.Message{}, answer: map[string]proto.Message{}, unimplemented: map[string]bool{}}
	cc := &classicConn{ps: &PluginSide{srv: srv, log: slog.New(slog.DiscardHandler)}, tr: ttrpcTransport{client: f.serve(t)}, full: "10-fake"}
	return cc, f, srv
}

// receivedAsConverted checks that the request the plugin got is what the
// old path sent: sent converted to v1alpha1, nothing it does not know.
func receivedAsConverted(t *testing.T, label string, got proto.Message, sent vtMessage) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: the plugin got nothing", label)
	}
	want := convert(t, sent, got.ProtoReflect().New().Interface().(vtMessage))
	if len(got.ProtoReflect().GetUnknown()) > 0 {
		t.Errorf("%s: the plugin got fields v1alpha1 does not know", label)
	}
	if !proto.Equal(got, want.(proto.Message)) {
		t.Errorf("%s: the plugin got\n  %v\nthe convert path sent\n  %v", label, got, want)
	}
}

// TestClassicPluginByTheBytes: for random requests (every field, the
// v1beta1-only ones included) and random classic answers, a classic plugin
// gets, decoded as v1alpha1, exactly what converting the request gave, and
// the server gets, as v1beta1, exactly what converting the answer gave.
func TestClassicPluginByTheBytes(t *testing.T) {
	cc, f, _ := newFakeClassicConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	desc := v1alpha1.File_pkg_api_api_proto.Services().ByName("Plugin").Methods()
	for seed := range uint64(40) {
		fl := newFiller(seed)
		for _, c := range classicCases(cc, fl) {
			out, err := protoregistry.GlobalTypes.FindMessageByName(desc.ByName(protoreflect.Name(c.method)).Output().FullName())
			if err != nil {
				t.Fatal(err)
			}
			answer := random(fl, out.New().Interface())
			f.mu.Lock()
			f.answer[c.method] = answer
			f.mu.Unlock()
			got, err := c.call(ctx)
			if err != nil {
				t.Fatalf("%s seed %d: %v", c.method, seed, err)
			}
			receivedAsConverted(t, c.method, f.last(c.method), c.sent)
			want := convert(t, answer.(vtMessage), got.(proto.Message).ProtoReflect().New().Interface().(vtMessage))
			if !proto.Equal(got.(proto.Message), want.(proto.Message)) {
				t.Errorf("%s seed %d: the answer decoded to\n  %v\nthe convert path gave\n  %v", c.method, seed, got, want)
			}
		}
		for _, c := range notificationCases(cc, fl) {
			if err := c.call(ctx); err != nil {
				t.Fatalf("%v: %v", c.event, err)
			}
			receivedAsConverted(t, c.event.String(), f.last(prettyEvent(c.event)), c.req)
		}
		if t.Failed() {
			return
		}
	}
	if _, err := cc.Shutdown(ctx, &nriv1beta1.ShutdownRequest{Reason: "test"}); err != nil || f.last("Shutdown") == nil {
		t.Fatalf("Shutdown: %v, or the plugin did not get it", err)
	}
}

// TestClassicPluginStateChangeByTheBytes: a plugin that does not implement
// the dedicated notification methods gets StateChangeEvents equal to those
// the convert path built, and a deprecation is recorded per event.
func TestClassicPluginStateChangeByTheBytes(t *testing.T) {
	cc, f, srv := newFakeClassicConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cases := notificationCases(cc, newFiller(7))
	for _, c := range cases {
		f.unimplemented[prettyEvent(c.event)] = true
	}
	for _, c := range cases {
		if err := c.call(ctx); err != nil {
			t.Fatalf("%v: %v", c.event, err)
		}
		want := &v1alpha1.StateChangeEvent{Event: v1alpha1.Event(c.event), Pod: convert(t, c.req.GetPod(), &v1alpha1.PodSandbox{})}
		if cr, ok := c.req.(interface{ GetContainer() *nriv1beta1.Container }); ok {
			want.Container = convert(t, cr.GetContainer(), &v1alpha1.Container{})
		}
		got := f.last("StateChange")
		if !proto.Equal(got, want) || len(got.ProtoReflect().GetUnknown()) > 0 {
			t.Errorf("%v: the plugin got the StateChange\n  %v\nthe convert path sent\n  %v", c.event, got, want)
		}
	}
	if n := len(srv.Deprecations()); n != len(cases) {
		t.Fatalf("%d deprecations recorded, want one per event (%d)", n, len(cases))
	}
}

// TestClassicRuntimeServiceUpdateContainers: a classic plugin's
// UpdateContainers, decoded straight into v1beta1, is refused until the
// plugin is registered, with the classic status.
func TestClassicRuntimeServiceUpdateContainers(t *testing.T) {
	cc := &classicConn{ps: &PluginSide{log: slog.New(slog.DiscardHandler)}, regC: make(chan *v1alpha1.RegisterPluginRequest, 1)}
	srv, err := ttrpc.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	cc.serveRuntime(srv)
	lis, err := net.Listen("unix", filepath.Join(t.TempDir(), "r.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(context.Background(), lis) }()
	defer srv.Close()
	conn, err := net.Dial("unix", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	rt := v1alpha1.NewRuntimeClient(ttrpc.NewClient(conn))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = rt.UpdateContainers(ctx, &v1alpha1.UpdateContainersRequest{Update: []*v1alpha1.ContainerUpdate{{ContainerId: "c"}}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("UpdateContainers before registration: %v, want FAILED_PRECONDITION", err)
	}
	if _, err := rt.RegisterPlugin(ctx, &v1alpha1.RegisterPluginRequest{PluginName: "fake", PluginIdx: "10"}); err != nil {
		t.Fatal(err)
	}
	if reg := <-cc.regC; reg.GetPluginName() != "fake" || reg.GetPluginIdx() != "10" {
		t.Fatalf("registration %v", reg)
	}
}

// BenchmarkClassicCreateContainer: nrid's CreateContainer call of a
// classic plugin with a typical request and answer, by the bytes (bytes)
// or converted to v1alpha1 and back (convert, the old path).
func BenchmarkClassicCreateContainer(b *testing.B) {
	cc, f, _ := newFakeClassicConn(b)
	req := fixture.CreateContainerRequest(1, 0)
	f.answer["CreateContainer"] = convert(b, fixture.CreateContainerResponse(), &v1alpha1.CreateContainerResponse{})
	ctx := context.Background()
	b.Run("bytes", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cc.CreateContainer(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("convert", func(b *testing.B) {
		plugin := v1alpha1.NewPluginClient(cc.tr.(ttrpcTransport).client)
		b.ReportAllocs()
		for b.Loop() {
			in := convert(b, &nriv1beta1.CreateContainerRequest{Pod: req.Pod, Container: req.Container}, &v1alpha1.CreateContainerRequest{})
			out, err := plugin.CreateContainer(ctx, in)
			if err != nil {
				b.Fatal(err)
			}
			_ = convert(b, out, &nriv1beta1.CreateContainerResponse{})
		}
	})
}
