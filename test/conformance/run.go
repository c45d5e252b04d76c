package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Wait is the generous bound on anything a scenario waits for.
const Wait = 20 * time.Second

// startWait bounds an executor's start, up to its registration.
const startWait = 3 * Wait

// shortCall is the request timeout of plugins that must time out: they
// block until their call's context ends, so the value only bounds how long
// a scenario waits, never what it asserts.
const shortCall = 300 * time.Millisecond

// Origin says where a scenario comes from.
type Origin int

const (
	// Upstream scenarios mirror classic NRI's own test suite
	// (pkg/adaptation/*_test.go), with strict order assertions.
	Upstream Origin = iota
	// Gap scenarios cover what classic NRI's suite does not test, as listed
	// in the reference's test inventory, and contract points of
	// docs/PROTOCOL.md.
	Gap
	// Deliberate scenarios each cover a deliberate change of nri-grpc from
	// classic NRI (DESIGN §5) and are named after it.
	Deliberate
	// Behaviour checks are not in the catalog: cmd/nritest's checks of a
	// plugin binary's behaviour ([ExecuteChecks]).
	Behaviour
)

// MarshalText renders the origin by name (JSON reports).
func (o Origin) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText parses an origin's name.
func (o *Origin) UnmarshalText(b []byte) error {
	for c := Upstream; c <= Behaviour; c++ {
		if c.String() == string(b) {
			*o = c
			return nil
		}
	}
	return fmt.Errorf("unknown origin %q", b)
}

func (o Origin) String() string {
	switch o {
	case Upstream:
		return "upstream"
	case Gap:
		return "gap"
	case Deliberate:
		return "deliberate"
	case Behaviour:
		return "behaviour"
	}
	return "unknown"
}

// ScenarioInfo describes a scenario.
type ScenarioInfo struct {
	// Group and Name make the subtest name "Group/Name".
	Group  string `json:"group"`
	Name   string `json:"name"`
	Origin Origin `json:"origin"`
}

type scenario struct {
	ScenarioInfo
	opts Options
	// manual scenarios build their envs themselves (S.NewEnv).
	manual bool
	run    func(s *S)
}

var (
	scenarios []*scenario
	groups    []string
)

func add(origin Origin, group, name string, opts Options, run func(s *S)) {
	if !slices.Contains(groups, group) {
		groups = append(groups, group)
	}
	scenarios = append(scenarios, &scenario{ScenarioInfo: ScenarioInfo{Group: group, Name: name, Origin: origin}, opts: opts, run: run})
}

func addManual(origin Origin, group, name string, run func(s *S)) {
	add(origin, group, name, Options{}, run)
	scenarios[len(scenarios)-1].manual = true
}

// Scenarios lists every scenario in the order Run runs them.
func Scenarios() []ScenarioInfo {
	var out []ScenarioInfo
	for _, g := range groups {
		for _, sc := range scenarios {
			if sc.Group == g {
				out = append(out, sc.ScenarioInfo)
			}
		}
	}
	return out
}

// RunOption configures Run.
type RunOption func(*runConfig)

type runConfig struct {
	skip     []func(ScenarioInfo) string
	keep     []func(ScenarioInfo) bool
	parallel int
	bound    time.Duration
}

// selected reports whether the Select options keep s.
func (c *runConfig) selected(s ScenarioInfo) bool {
	for _, keep := range c.keep {
		if !keep(s) {
			return false
		}
	}
	return true
}

// skipReason returns why s is skipped ("": it is not).
func (c *runConfig) skipReason(s ScenarioInfo) string {
	for _, skip := range c.skip {
		if why := skip(s); why != "" {
			return why
		}
	}
	return ""
}

// SkipScenarios makes Run skip every scenario for which reason returns a
// non-empty reason, with that reason: a path declares the scenarios that do
// not apply to it (a feature it cannot have), each with its own reason.
func SkipScenarios(reason func(ScenarioInfo) string) RunOption {
	return func(c *runConfig) { c.skip = append(c.skip, reason) }
}

// Run runs every scenario against the path setup describes, as subtests
// "Group/Name". Scenarios are independent (each has its own env) and run in
// parallel. Parallel and Bound are Execute's; go test's -parallel and
// -timeout bound Run.
func Run(t *testing.T, setup Setup, opts ...RunOption) {
	var cfg runConfig
	for _, o := range opts {
		o(&cfg)
	}
	for _, g := range groups {
		t.Run(g, func(t *testing.T) {
			for _, sc := range scenarios {
				if sc.Group != g || !cfg.selected(sc.ScenarioInfo) {
					continue
				}
				t.Run(sc.Name, func(t *testing.T) {
					if why := cfg.skipReason(sc.ScenarioInfo); why != "" {
						t.Skip(why)
					}
					t.Parallel()
					ctx, cancel := context.WithTimeout(context.Background(), 2*Wait)
					defer cancel()
					s := &S{T: t, ctx: ctx, setup: setup}
					if !sc.manual {
						s.env = s.MustEnv(sc.opts)
					}
					sc.run(s)
				})
			}
		})
	}
}

// S is the context of one running scenario.
type S struct {
	T
	ctx   context.Context
	setup Setup
	env   Env
}

// NewEnv builds an env with o, returning the setup's error.
func (s *S) NewEnv(o Options) (Env, error) { return s.setup(s.T, o.WithDefaults()) }

// MustEnv builds an env with o and fails the scenario on error.
func (s *S) MustEnv(o Options) Env {
	s.Helper()
	env, err := s.NewEnv(o)
	if err != nil {
		s.Fatalf("setting up NRI: %v", err)
	}
	return env
}

// Env returns the scenario's env.
func (s *S) Env() Env { return s.env }

// RT returns the env's runtime entry points.
func (s *S) RT() Runtime { return s.env.Runtime() }

// Log returns the env's call log.
func (s *S) Log() *CallLog { return s.env.Log() }

// Ctx returns the scenario's context (bounded generously).
func (s *S) Ctx() context.Context { return s.ctx }

// Opt configures a PluginSpec.
type Opt func(*PluginSpec)

// Spec builds a plugin spec.
func Spec(idx, name string, opts ...Opt) *PluginSpec {
	p := &PluginSpec{Index: idx, Name: name}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Start starts a plugin, failing the scenario on error.
func (s *S) Start(idx, name string, opts ...Opt) Plugin {
	s.Helper()
	return s.env.StartPlugin(s.T, Spec(idx, name, opts...))
}

// TryStart starts a plugin and returns the registration error.
func (s *S) TryStart(idx, name string, opts ...Opt) (Plugin, error) {
	return s.env.TryStartPlugin(s.T, Spec(idx, name, opts...))
}

// Plugin spec options.

func events(evs ...nriv1beta1.Event) Opt {
	return func(p *PluginSpec) { p.Events = append([]nriv1beta1.Event{}, evs...) }
}

func onCreate(f func(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error)) Opt {
	return func(p *PluginSpec) { p.OnCreateContainer = f }
}

func onUpdate(f func(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error)) Opt {
	return func(p *PluginSpec) { p.OnUpdateContainer = f }
}

func onStop(f func(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error)) Opt {
	return func(p *PluginSpec) { p.OnStopContainer = f }
}

func onValidate(f func(ctx context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error)) Opt {
	return func(p *PluginSpec) { p.OnValidate = f }
}

func onSync(f func(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error)) Opt {
	return func(p *PluginSpec) { p.OnSynchronize = f }
}

func handle(f func(ctx context.Context, method string, req proto.Message) error) Opt {
	return func(p *PluginSpec) { p.Handle = f }
}

func policy(failRequest, keepConnected bool) Opt {
	return func(p *PluginSpec) {
		p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: failRequest, KeepConnected: keepConnected}
	}
}

func caps(c *nriv1beta1.Capabilities) Opt { return func(p *PluginSpec) { p.Capabilities = c } }

func timeouts(t *nriv1beta1.Timeouts) Opt { return func(p *PluginSpec) { p.Timeouts = t } }

func selectors(sels ...*nriv1beta1.EventSelector) Opt {
	return func(p *PluginSpec) { p.Selectors = sels }
}

func rawEvents(m int32) Opt { return func(p *PluginSpec) { p.RawEvents = &m } }

// blockOn makes the given methods block until their call's context ends.
func blockOn(methods ...string) Opt {
	return handle(func(ctx context.Context, method string, _ proto.Message) error {
		if slices.Contains(methods, method) {
			<-ctx.Done()
			return status.FromContextError(ctx.Err()).Err()
		}
		return nil
	})
}

// failOn makes the given methods fail with err.
func failOn(err error, methods ...string) Opt {
	return handle(func(_ context.Context, method string, _ proto.Message) error {
		if slices.Contains(methods, method) {
			return err
		}
		return nil
	})
}

// Assertions.

// must fails the scenario on err.
func (s *S) must(what string, err error) {
	s.Helper()
	if err != nil {
		s.Fatalf("%s: %v", what, err)
	}
}

// eq fails the scenario when got and want differ: element by element,
// with proto.Equal for messages.
func eq[T any](s *S, what string, got, want []T) {
	s.Helper()
	same := func(a, b T) bool {
		if ma, ok := any(a).(proto.Message); ok {
			mb, _ := any(b).(proto.Message)
			return proto.Equal(ma, mb)
		}
		return fmt.Sprint(a) == fmt.Sprint(b)
	}
	if len(got) != len(want) || !slices.EqualFunc(got, want, same) {
		s.Fatalf("%s:\n got  %v\n want %v", what, sprint(got), sprint(want))
	}
}

// sprint renders a list, messages as text.
func sprint[T any](list []T) string {
	var parts []string
	for _, x := range list {
		if m, ok := any(x).(proto.Message); ok {
			parts = append(parts, "{"+prototext.MarshalOptions{}.Format(m)+"}")
		} else {
			parts = append(parts, fmt.Sprint(x))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// protoEq fails the scenario when got and want are not proto.Equal.
func protoEq(s *S, what string, got, want proto.Message) {
	s.Helper()
	if !proto.Equal(got, want) {
		s.Fatalf("%s:\n got  %s\n want %s", what, prototext.Format(got), prototext.Format(want))
	}
}

// errInfo returns the ErrorInfo reason and metadata of an error status.
func errInfo(err error) (string, map[string]string) {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason(), info.GetMetadata()
		}
	}
	return "", nil
}

// failsWith fails the scenario unless err is a status with the given code
// (codes.OK: any) and ErrorInfo reason, whose message contains every one of
// contains.
func (s *S) failsWith(what string, err error, code codes.Code, reason string, contains ...string) {
	s.Helper()
	if err == nil {
		s.Fatalf("%s succeeded, want an error with reason %s", what, reason)
	}
	if s.plainError(reason) {
		s.Logf("%s failed as expected (a classic NRI error: code, reason and message not asserted): %v", what, err)
		return
	}
	st := status.Convert(err)
	if code != codes.OK && st.Code() != code {
		s.Errorf("%s: code %v, want %v (%v)", what, st.Code(), code, err)
	}
	if r, _ := errInfo(err); r != reason {
		s.Errorf("%s: ErrorInfo reason %q, want %q (%v)", what, r, reason, err)
	}
	for _, c := range contains {
		if !strings.Contains(st.Message(), c) {
			s.Errorf("%s: message %q does not contain %q", what, st.Message(), c)
		}
	}
}

// namesPlugins fails the scenario unless the error's ErrorInfo names the
// given plugins.
func (s *S) namesPlugins(what string, err error, plugins ...string) {
	s.Helper()
	if r, _ := errInfo(err); s.plainError(r) {
		return
	}
	_, md := errInfo(err)
	got := strings.Split(md["plugins"], ",")
	for _, p := range plugins {
		if !slices.Contains(got, p) {
			s.Errorf("%s: ErrorInfo plugins %q does not name %s", what, md["plugins"], p)
		}
	}
}

// PlainErrors is implemented by envs on which some errors reach the
// runtime or the plugin as classic NRI reports them: plain text, without
// nri-grpc's status code, ErrorInfo reason and message (a classic runtime's
// own errors, a classic plugin's failed registration). On such envs a
// scenario expecting one of these errors asserts only that the operation
// failed.
type PlainErrors interface {
	// PlainError reports whether an error nri-grpc reports with the
	// ErrorInfo reason (or without ErrorInfo, reason "") is a plain
	// classic error on this env.
	PlainError(reason string) bool
}

// plainError reports whether the env reports errors of reason as plain
// classic errors.
func (s *S) plainError(reason string) bool {
	pe, ok := s.env.(PlainErrors)
	return ok && pe.PlainError(reason)
}

// waitDone waits for a plugin's registration to end.
func (s *S) waitDone(p Plugin) {
	s.Helper()
	select {
	case <-p.Done():
	case <-time.After(Wait):
		s.Fatalf("the registration of %s did not end", p.Full())
	}
}

// waitCalls waits until the log holds call ("NN-name:Method") n times.
func (s *S) waitCalls(call string, n int) {
	s.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, Wait)
	defer cancel()
	if err := s.Log().WaitFor(ctx, call, n); err != nil {
		s.Fatal(err)
	}
}
