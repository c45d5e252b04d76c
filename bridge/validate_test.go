package bridge_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/net/multiplex"
	"github.com/containerd/nri/pkg/stub"
	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/nri-grpc/nri-grpc/bridge"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
)

// runtimeV0123 is test/classic-runtime: pkg/adaptation of NRI v0.12.3 (the
// NRI of containerd v2.4.2) in a process of its own, driven over its stdin
// and stdout.
type runtimeV0123 struct {
	in  io.WriteCloser
	out *bufio.Scanner
	mu  sync.Mutex // one command at a time
}

// runtimeAnswer is what test/classic-runtime answers a command.
type runtimeAnswer struct {
	Err string `json:"err,omitempty"`
	Rsp []byte `json:"rsp,omitempty"`
}

// lockedBuffer collects a process's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startRuntimeV0123 builds and starts test/classic-runtime on socket, with
// the pods and containers of ctrs in its state.
func startRuntimeV0123(t *testing.T, socket string, pods []*v1alpha1.PodSandbox, ctrs []*v1alpha1.Container) *runtimeV0123 {
	t.Helper()
	bin := filepath.Join(tempDir(t), "classic-runtime")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "test", "classic-runtime")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the v0.12.3 runtime: %v\n%s", err, out)
	}
	// A long request timeout: the tests hold plugins on purpose, and a
	// loaded machine must not turn that into a plugin timeout.
	cmd := exec.Command(bin, "-socket", socket, "-timeout", wait().String())
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = in.Close() // the runtime stops at the end of its input
		select {
		case <-exited:
		case <-time.After(wait()):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("classic-runtime (NRI v0.12.3) stderr:\n%s", stderr.String())
		}
	})
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	r := &runtimeV0123{in: in, out: sc}
	state, err := (&v1alpha1.SynchronizeRequest{Pods: pods, Containers: ctrs}).MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	if a := r.do(t, map[string]any{"op": "start", "state": state}); a.Err != "" {
		t.Fatal(a.Err)
	}
	if v := string(r.do(t, map[string]any{"op": "version"}).Rsp); v != "v0.12.3" {
		t.Fatalf("the runtime announces NRI %q, want v0.12.3", v)
	}
	return r
}

// do sends one command and reads its answer.
func (r *runtimeV0123) do(t *testing.T, cmd map[string]any) runtimeAnswer {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := json.Marshal(cmd)
	if err != nil {
		panic(err)
	}
	if _, err := r.in.Write(append(b, '\n')); err != nil {
		t.Errorf("classic-runtime: %v", err)
		return runtimeAnswer{Err: err.Error()}
	}
	if !r.out.Scan() {
		t.Errorf("classic-runtime ended: %v", r.out.Err())
		return runtimeAnswer{Err: "classic-runtime ended"}
	}
	var a runtimeAnswer
	if err := json.Unmarshal(r.out.Bytes(), &a); err != nil {
		t.Errorf("classic-runtime: %v", err)
	}
	return a
}

// settled waits until no plugin synchronization is in progress.
func (r *runtimeV0123) settled(t *testing.T) { r.do(t, map[string]any{"op": "settle"}) }

// create runs the runtime's CreateContainer; it returns the runtime's
// answer or its error.
func (r *runtimeV0123) create(t *testing.T, pod *v1alpha1.PodSandbox, ctr *v1alpha1.Container) (*v1alpha1.CreateContainerResponse, error) {
	req, err := (&v1alpha1.CreateContainerRequest{Pod: pod, Container: ctr}).MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	a := r.do(t, map[string]any{"op": "create", "req": req})
	if a.Err != "" {
		return nil, errors.New(a.Err)
	}
	rsp := &v1alpha1.CreateContainerResponse{}
	if err := rsp.UnmarshalVT(a.Rsp); err != nil {
		t.Fatal(err)
	}
	return rsp, nil
}

// validationRecorder is a classic validator that accepts everything and
// records what the runtime asked it to validate: the adjustment and updates
// the runtime is about to apply.
type validationRecorder struct {
	syncSignal
	mu   sync.Mutex
	reqs map[string]*v1alpha1.ValidateContainerAdjustmentRequest
}

func (v *validationRecorder) ValidateContainerAdjustment(_ context.Context, req *v1alpha1.ValidateContainerAdjustmentRequest) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.reqs == nil {
		v.reqs = make(map[string]*v1alpha1.ValidateContainerAdjustmentRequest)
	}
	v.reqs[req.GetContainer().GetId()] = req
	return nil
}

func (v *validationRecorder) get(id string) *v1alpha1.ValidateContainerAdjustmentRequest {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.reqs[id]
}

// classicValidator is a classic validator rejecting containers named bad.
type classicValidator struct {
	syncSignal
	reason string
}

func (v *classicValidator) ValidateContainerAdjustment(_ context.Context, req *v1alpha1.ValidateContainerAdjustmentRequest) error {
	if req.GetContainer().GetName() == "bad" {
		return errors.New(v.reason)
	}
	return nil
}

// holdingPlugin is a classic plugin whose CreateContainer tells arrived and
// waits for release.
type holdingPlugin struct {
	syncSignal
	arrived chan struct{}
	release chan struct{}
}

func (h *holdingPlugin) CreateContainer(context.Context, *v1alpha1.PodSandbox, *v1alpha1.Container) (*v1alpha1.ContainerAdjustment, []*v1alpha1.ContainerUpdate, error) {
	h.arrived <- struct{}{}
	<-h.release
	return nil, nil, nil
}

// validateMask subscribes a gRPC test plugin to validation only.
var validateMask = nri.EventMask(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT)

const rejectReason = "containers named bad are not allowed here"

// grpcValidator registers the gRPC validator 20-v with n: it rejects
// containers named bad.
func grpcValidator(t *testing.T, n *nrid) {
	t.Helper()
	n.grpcPlugin(t, "20", "v", func(p *testplugin.Plugin) {
		p.Events = validateMask
		p.OnValidate = func(_ context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
			if req.GetContainer().GetName() == "bad" {
				return &nriv1beta1.ValidateContainerAdjustmentResponse{Reject: true, Reason: rejectReason}, nil
			}
			return &nriv1beta1.ValidateContainerAdjustmentResponse{}, nil
		}
	})
}

// grpcAdjuster registers the gRPC plugin 10-adj with n: it adjusts every
// container and updates the running container other.
func grpcAdjuster(t *testing.T, n *nrid, other *v1alpha1.Container) {
	t.Helper()
	n.grpcPlugin(t, "10", "adj", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			shares := wrapperspb.UInt64(512)
			return &nriv1beta1.CreateContainerResponse{
				Adjust: &nriv1beta1.ContainerAdjustment{
					Annotations: map[string]string{"adjusted-by": "10-adj"},
					Env:         []*nriv1beta1.KeyValue{{Key: "FROM_GRPC", Value: "1"}},
				},
				Update: []*nriv1beta1.ContainerUpdate{{ContainerId: other.GetId(),
					Linux: &nriv1beta1.LinuxContainerUpdate{Resources: &nriv1beta1.LinuxResources{
						Cpu: &nriv1beta1.LinuxCPU{Shares: shares}}}}},
			}, nil
		}
	})
}

func named(c *v1alpha1.Container, name string) *v1alpha1.Container {
	c.Name = name
	return c
}

// classicRejection is the error a classic runtime returns for a classic
// validator's rejection (pkg/api ValidationResult, v0.10.0 to v0.12.5).
func classicRejection(plugin, reason string) string {
	return fmt.Sprintf("validator %q rejected container adjustment, reason: %s", plugin, reason)
}

// TestValidationRejectionReachesRuntimeAsClassic: behind a runtime of NRI
// v0.12.3 (containerd v2.4.2), a gRPC validator's rejection reaches the
// runtime as a classic validator's does — a plain error of the runtime's
// own validation, in the same words as the rejection of a classic
// validator connected to a runtime directly, naming the bridge and quoting
// nri-grpc's message, which names the real validator — instead of a
// CreateContainer status. Nothing of the rejected container is applied:
// the runtime's validators see no adjustment and no update from the bridge.
// Another container is accepted and adjusted as usual.
func TestValidationRejectionReachesRuntimeAsClassic(t *testing.T) {
	// The reference: a classic validator connected to a runtime directly.
	direct := filepath.Join(tempDir(t), "nri.sock")
	ref := startClassicRuntime(t, direct, nil, nil)
	startClassic(t, direct, "20", "v", &classicValidator{reason: rejectReason})
	ref.settled()
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	_, err := ref.a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: alphaPod(1), Container: named(alphaCtr(1, 0), "bad")})
	if err == nil || err.Error() != classicRejection("20-v", rejectReason) {
		t.Fatalf("a classic validator's rejection: %v", err)
	}
	if _, ok := status.FromError(err); ok {
		t.Fatalf("a classic validator's rejection is a plain error, got a status: %v", err)
	}
	reference := err.Error()

	// The bridge behind NRI v0.12.3, with a gRPC validator of the same name
	// and reason.
	n := startNrid(t)
	running := alphaCtr(1, 0)
	grpcAdjuster(t, n, running)
	grpcValidator(t, n)
	sock := filepath.Join(tempDir(t), "nri.sock")
	rt := startRuntimeV0123(t, sock, []*v1alpha1.PodSandbox{alphaPod(1)}, []*v1alpha1.Container{running})
	attachBridge(t, n, sock)
	rec := &validationRecorder{}
	startClassic(t, sock, "90", "recorder", rec)
	rt.settled(t)

	bad := named(alphaCtr(2, 0), "bad")
	_, err = rt.create(t, alphaPod(2), bad)
	want := classicRejection(bridge.DefaultPluginIndex+"-"+bridge.DefaultPluginName, reference)
	if err == nil || err.Error() != want {
		t.Fatalf("the runtime's CreateContainer of a rejected container:\n got %v\nwant %s", err, want)
	}
	// Nothing of it was to be applied: the runtime's validation saw no
	// adjustment and no update (the recorder validates concurrently with
	// the bridge, on the same merged result).
	seen := rec.get(bad.GetId())
	if seen == nil {
		t.Fatal("the runtime did not validate the rejected container with its other validators")
	}
	if adj := seen.GetAdjust(); adj.GetAnnotations()["adjusted-by"] != "" || len(adj.GetEnv()) != 0 || len(seen.GetUpdate()) != 0 {
		t.Fatalf("the runtime was about to apply nri-grpc's changes to a rejected container: adjust %v, updates %v", adj, seen.GetUpdate())
	}
	if owners := seen.GetOwners(); owners != nil && len(owners.GetOwners()) > 0 {
		t.Fatalf("the rejected container's fields have owners: %v", owners)
	}

	// Another container is accepted and adjusted as usual.
	good := named(alphaCtr(2, 1), "good")
	rsp, err := rt.create(t, alphaPod(2), good)
	if err != nil {
		t.Fatalf("an accepted container: %v", err)
	}
	if rsp.GetAdjust().GetAnnotations()["adjusted-by"] != "10-adj" || len(rsp.GetAdjust().GetEnv()) != 1 {
		t.Fatalf("the accepted container's adjustment: %v", rsp.GetAdjust())
	}
	if len(rsp.GetUpdate()) != 1 || rsp.GetUpdate()[0].GetContainerId() != running.GetId() {
		t.Fatalf("the accepted container's updates: %v", rsp.GetUpdate())
	}
	if seen := rec.get(good.GetId()); seen.GetAdjust().GetAnnotations()["adjusted-by"] != "10-adj" {
		t.Fatalf("the runtime validated the accepted container with adjustment %v", seen.GetAdjust())
	}
	// Both containers went through nri-grpc's validator.
	if got := len(n.log.Of("20-v", "ValidateContainerAdjustment")); got != 2 {
		t.Fatalf("the gRPC validator validated %d containers, want 2: %v", got, n.log.Strings())
	}
}

// TestValidationRejectionShapeIndependentOfRegistrationOrder: behind NRI
// v0.12.3, a gRPC validator that registers after the bridge attached gives
// the runtime the same rejection, word for word, as one registered before
// the runtime configured the bridge (issue 28: the first was the bridge's
// CreateContainer status, the second the classic validator's error), and a
// container created before any validator registered is accepted.
func TestValidationRejectionShapeIndependentOfRegistrationOrder(t *testing.T) {
	want := classicRejection(bridge.DefaultPluginIndex+"-"+bridge.DefaultPluginName, classicRejection("20-v", rejectReason))
	for _, before := range []bool{true, false} {
		name := map[bool]string{true: "validator known at Configure", false: "validator registering after the bridge attached"}[before]
		t.Run(name, func(t *testing.T) {
			n := startNrid(t)
			if before {
				grpcValidator(t, n)
			}
			sock := filepath.Join(tempDir(t), "nri.sock")
			rt := startRuntimeV0123(t, sock, nil, nil)
			attachBridge(t, n, sock)
			rt.settled(t)
			if !before {
				if _, err := rt.create(t, alphaPod(1), named(alphaCtr(1, 0), "bad")); err != nil {
					t.Fatalf("a creation without validators: %v", err)
				}
				grpcValidator(t, n)
			}
			_, err := rt.create(t, alphaPod(1), named(alphaCtr(1, 1), "bad"))
			if err == nil || err.Error() != want {
				t.Fatalf("the runtime's CreateContainer of a rejected container:\n got %v\nwant %s", err, want)
			}
			if _, err := rt.create(t, alphaPod(1), named(alphaCtr(1, 2), "good")); err != nil {
				t.Fatalf("an accepted container: %v", err)
			}
		})
	}
}

// TestValidationRejectionFailsClosedWhenBridgeGoes: the bridge answered
// the CreateContainer of a rejected container with nothing and its
// connection closed before the runtime's validation (nrid killed in that
// window): NRI v0.12.3 still calls the bridge as a validator, the call
// fails, and so does the creation. This is why the bridge defers
// rejections only to runtimes that do so (docs/bridge.md).
func TestValidationRejectionFailsClosedWhenBridgeGoes(t *testing.T) {
	n := startNrid(t)
	grpcValidator(t, n)
	sock := filepath.Join(tempDir(t), "nri.sock")
	rt := startRuntimeV0123(t, sock, nil, nil)

	rs, err := bridge.NewRuntimeSide(n.srv, bridge.WithRuntimeSocket(sock), bridge.WithRuntimeLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = rs.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-rs.Synchronized():
	case <-time.After(wait()):
		t.Fatal("the bridge did not attach")
	}
	// A plugin after the bridge holds the creation: the window between the
	// bridge's answer and the runtime's validation.
	hold := &holdingPlugin{arrived: make(chan struct{}, 1), release: make(chan struct{})}
	startClassic(t, sock, "50", "hold", hold)
	rt.settled(t)

	result := make(chan error, 1)
	go func() {
		_, err := rt.create(t, alphaPod(1), named(alphaCtr(1, 0), "bad"))
		result <- err
	}()
	select {
	case <-hold.arrived:
	case <-time.After(wait()):
		t.Fatal("the creation did not reach the plugin after the bridge")
	}
	if got := len(n.log.Of("20-v", "ValidateContainerAdjustment")); got != 1 {
		t.Fatalf("nri-grpc's validator was called %d times before the bridge answered", got)
	}
	cancel() // the bridge's connection closes
	<-done
	close(hold.release)
	select {
	case err := <-result:
		want := fmt.Sprintf("validator plugin %s-%s failed", bridge.DefaultPluginIndex, bridge.DefaultPluginName)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("the runtime's CreateContainer: %v, want an error containing %q", err, want)
		}
	case <-time.After(wait()):
		t.Fatal("the runtime's CreateContainer did not return")
	}
}

// TestValidationRejectionIsCreateContainerErrorElsewhere: behind a runtime
// that does not announce an NRI of v0.12.0 to v0.12.4 (here the tests' own
// pkg/adaptation v0.12.5, which announces "0.0.0-unknown" from a test
// binary), the bridge does not subscribe to validation, and a rejection
// stays the CreateContainer error carrying the server's status.
func TestValidationRejectionIsCreateContainerErrorElsewhere(t *testing.T) {
	n := startNrid(t)
	grpcValidator(t, n)
	sock := filepath.Join(tempDir(t), "nri.sock")
	rt := startClassicRuntime(t, sock, nil, nil)
	attachBridge(t, n, sock)
	rt.settled()
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	_, err := rt.a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: alphaPod(1), Container: named(alphaCtr(1, 0), "bad")})
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.FailedPrecondition || st.Message() != classicRejection("20-v", rejectReason) {
		t.Fatalf("the runtime's CreateContainer: %v, want the server's FAILED_PRECONDITION status", err)
	}
	if _, err := rt.a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: alphaPod(1), Container: named(alphaCtr(1, 1), "good")}); err != nil {
		t.Fatal(err)
	}
}

// syncSignal tells when the runtime synchronized a classic plugin: the
// runtime lists it once that synchronization is over (settled).
type syncSignal struct {
	once sync.Once
	ch   chan struct{}
	mu   sync.Mutex
}

func (s *syncSignal) done() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *syncSignal) Synchronize(context.Context, []*v1alpha1.PodSandbox, []*v1alpha1.Container) ([]*v1alpha1.ContainerUpdate, error) {
	ch := s.done()
	s.once.Do(func() { close(ch) })
	return nil, nil
}

// startClassic connects the pkg/stub plugin impl to socket as idx-name (it
// subscribes to the events impl implements) and waits until the runtime
// synchronized it; settle the runtime after it.
func startClassic(t *testing.T, socket, idx, name string, impl interface{ done() chan struct{} }) {
	t.Helper()
	st, err := stub.New(impl, stub.WithPluginName(name), stub.WithPluginIdx(idx), stub.WithSocketPath(socket))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	if err := st.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	select {
	case <-impl.done():
	case <-ctx.Done():
		t.Fatalf("the runtime did not synchronize %s-%s", idx, name)
	}
}

// configureByHand attaches a bridge for n to a hand-driven classic runtime
// (the upstream multiplexer and ttrpc) that announces nriVersion at
// Configure, and returns the events the bridge subscribed to.
func configureByHand(t *testing.T, n *nrid, nriVersion string) v1alpha1.EventMask {
	t.Helper()
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
	mux.Unblock()
	select {
	case <-reg.reg:
	case <-ctx.Done():
		t.Fatal("the bridge did not register")
	}
	cfg, err := v1alpha1.NewPluginClient(client).Configure(ctx, &v1alpha1.ConfigureRequest{
		RuntimeName: "hand", RuntimeVersion: "v1", NRIVersion: nriVersion, RequestTimeout: 2000})
	if err != nil {
		t.Fatal(err)
	}
	return v1alpha1.EventMask(cfg.GetEvents())
}

// TestBridgeSubscribesToValidationByNRIVersion: the bridge subscribes to
// ValidateContainerAdjustment only behind NRI v0.12.0 to v0.12.4, the
// releases that call every subscribed validator, a closed one too
// (docs/bridge.md); releases before v0.10.0 would refuse the subscription,
// v0.10 and v0.11 announce no version, v0.12.5 skips closed validators.
// Whether nri-grpc validates at that moment does not matter: a validator
// may register later, and its rejections must have the same shape (issue
// 28), so the bridge subscribes with no validator behind it too.
func TestBridgeSubscribesToValidationByNRIVersion(t *testing.T) {
	n := startNrid(t)
	if got := configureByHand(t, n, "v0.12.3"); !got.IsSet(v1alpha1.Event_VALIDATE_CONTAINER_ADJUSTMENT) {
		t.Errorf("not subscribed to validation with no validator behind the bridge: %s", got.PrettyString())
	}
	grpcValidator(t, n)
	for _, tc := range []struct {
		nri  string
		want bool
	}{
		{"", false}, // v0.11.0 and older
		{"v0.12.0", true},
		{"v0.12.3", true},
		{"v0.12.4", true},
		{"v0.12.5", false},
		{"v0.13.0", false},
		{"0.0.0-unknown", false},
	} {
		mask := configureByHand(t, n, tc.nri)
		if got := mask.IsSet(v1alpha1.Event_VALIDATE_CONTAINER_ADJUSTMENT); got != tc.want {
			t.Errorf("NRI %q: subscribed to validation %v, want %v (%s)", tc.nri, got, tc.want, mask.PrettyString())
		}
		if !mask.IsSet(v1alpha1.Event_CREATE_CONTAINER) || !mask.IsSet(v1alpha1.Event_POST_UPDATE_POD_SANDBOX) {
			t.Errorf("NRI %q: lifecycle events missing: %s", tc.nri, mask.PrettyString())
		}
	}
}
