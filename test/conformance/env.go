package conformance

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

// Runtime is how a scenario drives the runtime's lifecycle events into NRI:
// the 13 entry points, with the signatures of *server.Server's. Each request
// passed in is owned by NRI afterwards: scenarios build a fresh one per call.
type Runtime interface {
	RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest) error
	UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest) error
	PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) ([]*nriv1beta1.PluginError, error)
	StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest) ([]*nriv1beta1.PluginError, error)
	RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest) ([]*nriv1beta1.PluginError, error)
	CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.AdaptationServiceCreateContainerResponse, error)
	PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest) ([]*nriv1beta1.PluginError, error)
	StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest) error
	PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest) ([]*nriv1beta1.PluginError, error)
	UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.AdaptationServiceUpdateContainerResponse, error)
	PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest) ([]*nriv1beta1.PluginError, error)
	StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.AdaptationServiceStopContainerResponse, error)
	RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest) ([]*nriv1beta1.PluginError, error)
}

// Env is one path through NRI, built for one scenario by a [Setup]. The
// setup releases everything with t.Cleanup. Its methods take the [T] of
// the scenario calling them (a *testing.T under go test).
type Env interface {
	// Runtime returns the entry points the runtime calls.
	Runtime() Runtime
	// SetState sets the runtime's pods and containers (server.SetRuntime on
	// the gRPC paths) and returns once NRI uses them. The env starts with an
	// attached runtime and an empty state; every later SetState is a
	// runtime restart: already registered plugins are resynchronized.
	SetState(t T, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container)
	// StartPlugin registers the plugin spec describes and returns once it is
	// registered (configured and synchronized); it fails t on error.
	StartPlugin(t T, spec *PluginSpec) Plugin
	// TryStartPlugin is StartPlugin returning the registration error. The
	// plugin is stopped with t.Cleanup either way.
	TryStartPlugin(t T, spec *PluginSpec) (Plugin, error)
	// Log returns the calls every plugin of the env received, in order.
	Log() *CallLog
	// Applied returns the updates and evictions the runtime was asked to
	// apply outside of an event (synchronization, unsolicited updates).
	Applied() *AppliedLog
	// Shutdown stops NRI (server.Shutdown): plugins are told why.
	Shutdown(ctx context.Context) error
}

// DryRunner is implemented by envs that can evaluate a dry run
// (AdminService.DryRun).
type DryRunner interface {
	DryRun(ctx context.Context, req *nriv1beta1.DryRunRequest) (*nriv1beta1.DryRunResponse, error)
}

// Setup builds an Env for a scenario. It returns an error only when NRI
// refuses the configuration in o (scenarios of invalid configurations);
// any other failure fails t.
type Setup func(t T, o Options) (Env, error)

// Options configure the NRI of an env. Zero values mean the defaults.
type Options struct {
	// RuntimeName and RuntimeVersion identify the runtime (Configure,
	// attach). Defaults: DefaultRuntimeName, DefaultRuntimeVersion.
	RuntimeName, RuntimeVersion string
	// RequestTimeout and RegistrationTimeout are NRI's default call and
	// registration timeouts; a negative value is an invalid configuration.
	RequestTimeout, RegistrationTimeout time.Duration
	// MaxTimeout caps the timeouts plugins may ask for.
	MaxTimeout time.Duration
	// Validator configures the default validator and the operator's list of
	// required plugins.
	Validator validate.Config
	// PluginPolicy is the operator's per-plugin policy.
	PluginPolicy func(full string) *server.PluginPolicy
	// Metrics receives NRI's measurements of plugin calls and
	// synchronizations.
	Metrics Metrics
	// DisableExternalConnections: plugins cannot register from outside.
	DisableExternalConnections bool
	// FailUpdates lists container ids whose updates the runtime reports as
	// failed (and evictions likewise).
	FailUpdates []string
}

// Metrics is the part of NRI's measurements scenarios check (the server's
// server.Metrics has more; setups ignore the rest).
type Metrics interface {
	// PluginCall records one call to a plugin.
	PluginCall(plugin string, event nriv1beta1.Event, outcome nriv1beta1.CallOutcome, d time.Duration)
	// Synchronized records one (re)synchronization of a plugin.
	Synchronized(plugin string, objects, bytes int, d time.Duration)
}

// Defaults of Options.
const (
	DefaultRuntimeName    = "conformance-runtime"
	DefaultRuntimeVersion = "v1.2.3"
)

// WithDefaults returns o with the defaults filled in.
func (o Options) WithDefaults() Options {
	if o.RuntimeName == "" {
		o.RuntimeName = DefaultRuntimeName
	}
	if o.RuntimeVersion == "" {
		o.RuntimeVersion = DefaultRuntimeVersion
	}
	return o
}

// PluginSpec describes a plugin to start. Handlers are optional; a plugin
// without a handler answers with an empty response.
type PluginSpec struct {
	// Name and Index identify the plugin.
	Name, Index string
	// Events is the subscription; nil means every lifecycle event, plus
	// validation when OnValidate is set (as a classic stub subscribes to the
	// handlers it implements).
	Events []nriv1beta1.Event
	// RawEvents, when set, is returned verbatim in ConfigureResponse.events.
	RawEvents *int32
	// FailurePolicy is asked for in Configure.
	FailurePolicy *nriv1beta1.FailurePolicy
	// Capabilities and Timeouts are declared at registration.
	Capabilities *nriv1beta1.Capabilities
	Timeouts     *nriv1beta1.Timeouts
	// Status and StatusReason are the status registered with (gRPC
	// plugins; s9_status.go).
	Status       nriv1beta1.PluginStatus
	StatusReason string
	// Selectors are the plugin's event selectors (declared at
	// registration; operator-imposed for classic plugins behind the
	// bridge).
	Selectors []*nriv1beta1.EventSelector

	OnCreateContainer func(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error)
	OnUpdateContainer func(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error)
	OnStopContainer   func(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error)
	OnValidate        func(ctx context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error)
	OnSynchronize     func(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error)
	// Handle is called for every call (Configure, Synchronize and Shutdown
	// included) after it is logged and before the specific handler, with
	// the short method name ("CreateContainer"); a non-nil error is the
	// plugin's answer. Use it for errors and delays on any event.
	Handle func(ctx context.Context, method string, req proto.Message) error
}

// Full returns "NN-name".
func (s *PluginSpec) Full() string { return s.Index + "-" + s.Name }

// Mask returns the subscription mask to answer in Configure.
func (s *PluginSpec) Mask() int32 {
	if s.RawEvents != nil {
		return *s.RawEvents
	}
	if s.Events == nil {
		m := nri.AllEvents &^ nri.EventMask(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT)
		if s.OnValidate != nil {
			m = nri.AllEvents
		}
		return int32(m)
	}
	return int32(nri.EventMask(s.Events...))
}

// Plugin is a started plugin.
type Plugin interface {
	// Full returns "NN-name".
	Full() string
	// InstanceID returns the instance id of the plugin's latest Configure.
	InstanceID() string
	// Stop ends the plugin: its registration and its endpoint.
	Stop()
	// Done is closed when the plugin's registration ended.
	Done() <-chan struct{}
	// Shutdowns returns the Shutdown calls the plugin received.
	Shutdowns() []*nriv1beta1.ShutdownRequest
	// UpdateContainers asks for unsolicited updates and evictions.
	UpdateContainers(ctx context.Context, updates []*nriv1beta1.ContainerUpdate,
		evictions []*nriv1beta1.ContainerEviction) (failed []*nriv1beta1.ContainerUpdate, failedEvictions []*nriv1beta1.ContainerEviction, err error)
}

// Call is one call a plugin received.
type Call = testplugin.Call

// CallLog records the calls of several plugins in the order they arrive.
type CallLog = testplugin.Log

// NewCallLog returns an empty log.
func NewCallLog() *CallLog { return testplugin.NewLog() }

// Applied is one request to the runtime to apply updates and evictions.
type Applied struct {
	// Plugin is the full name of the plugin that asked.
	Plugin string
	Update []*nriv1beta1.ContainerUpdate
	Evict  []*nriv1beta1.ContainerEviction
}

// AppliedLog records what the runtime was asked to apply.
type AppliedLog struct {
	mu      sync.Mutex
	all     []Applied
	changed chan struct{}
}

// NewAppliedLog returns an empty log.
func NewAppliedLog() *AppliedLog { return &AppliedLog{changed: make(chan struct{})} }

// Add records one request; setups call it from their runtime.
func (l *AppliedLog) Add(a Applied) {
	l.mu.Lock()
	l.all = append(l.all, a)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// All returns the recorded requests.
func (l *AppliedLog) All() []Applied {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

// Wait blocks until pred holds or ctx ends.
func (l *AppliedLog) Wait(ctx context.Context, pred func([]Applied) bool) error {
	for {
		l.mu.Lock()
		ok := pred(l.all)
		ch := l.changed
		l.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the runtime to apply updates: %w (have %d requests)", ctx.Err(), len(l.All()))
		}
	}
}

// FailedUpdates returns, for a runtime configured with Options.FailUpdates,
// the updates and evictions it reports as failed. Setups use it to answer.
func FailedUpdates(o Options, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction) {
	var (
		fu []*nriv1beta1.ContainerUpdate
		fe []*nriv1beta1.ContainerEviction
	)
	for _, u := range updates {
		if slices.Contains(o.FailUpdates, u.GetContainerId()) {
			fu = append(fu, u)
		}
	}
	for _, e := range evictions {
		if slices.Contains(o.FailUpdates, e.GetContainerId()) {
			fe = append(fe, e)
		}
	}
	return fu, fe
}

// ServerRuntime returns the server's Go API as the conformance Runtime
// (the same methods, without per-event options): the runtime of the paths
// that embed server.Server.
func ServerRuntime(s *server.Server) Runtime { return serverRuntime{s} }

type serverRuntime struct{ s *server.Server }

func (r serverRuntime) RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest) error {
	return r.s.RunPodSandbox(ctx, req)
}

func (r serverRuntime) UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest) error {
	return r.s.UpdatePodSandbox(ctx, req)
}

func (r serverRuntime) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.PostUpdatePodSandbox(ctx, req)
}

func (r serverRuntime) StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.StopPodSandbox(ctx, req)
}

func (r serverRuntime) RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.RemovePodSandbox(ctx, req)
}

func (r serverRuntime) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.AdaptationServiceCreateContainerResponse, error) {
	return r.s.CreateContainer(ctx, req)
}

func (r serverRuntime) PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.PostCreateContainer(ctx, req)
}

func (r serverRuntime) StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest) error {
	return r.s.StartContainer(ctx, req)
}

func (r serverRuntime) PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.PostStartContainer(ctx, req)
}

func (r serverRuntime) UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.AdaptationServiceUpdateContainerResponse, error) {
	return r.s.UpdateContainer(ctx, req)
}

func (r serverRuntime) PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.PostUpdateContainer(ctx, req)
}

func (r serverRuntime) StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.AdaptationServiceStopContainerResponse, error) {
	return r.s.StopContainer(ctx, req)
}

func (r serverRuntime) RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.RemoveContainer(ctx, req)
}
