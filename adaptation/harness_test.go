package adaptation_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	upstream "github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/adaptation/builtin"
	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
	"github.com/containerd/nri/pkg/stub"
	validator "github.com/containerd/nri/plugins/default-validator/builtin"

	"github.com/nri-grpc/nri-grpc/adaptation"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// The tests drive the drop-in exactly as a runtime drives pkg/adaptation,
// and most of them drive upstream's pkg/adaptation beside it with the same
// plugins (upstream's pkg/stub, over the classic socket) and the same
// requests: what the runtime gets must be the same.

func init() { nrilog.Set(quietLog{}) }

// quietLog silences upstream's process-global logger (NRI_TEST_LOG=1 shows it).
type quietLog struct{}

var logOn = os.Getenv("NRI_TEST_LOG") != ""

func (quietLog) Debugf(_ context.Context, f string, a ...any) { logf("debug", f, a...) }
func (quietLog) Infof(_ context.Context, f string, a ...any)  { logf("info", f, a...) }
func (quietLog) Warnf(_ context.Context, f string, a ...any)  { logf("warn", f, a...) }
func (quietLog) Errorf(_ context.Context, f string, a ...any) { logf("error", f, a...) }

func logf(level, f string, a ...any) {
	if logOn {
		fmt.Fprintf(os.Stderr, "nri %s: %s\n", level, fmt.Sprintf(f, a...))
	}
}

// nriAPI is what a runtime calls: both implementations have it.
type nriAPI = adaptation.Interface

var (
	_ nriAPI = (*upstream.Adaptation)(nil)
	_ nriAPI = (*adaptation.Adaptation)(nil)
)

// impl names an implementation.
type impl string

const (
	upstreamImpl impl = "upstream"
	dropIn       impl = "drop-in"
)

// both are the implementations a differential test runs on.
var both = []impl{upstreamImpl, dropIn}

// runtime is a fake container runtime: its pods and containers (what its
// SyncFn lists) and the updates its UpdateFn was asked to apply.
type runtime struct {
	mu      sync.Mutex
	pods    []*api.PodSandbox
	ctrs    []*api.Container
	updates []*api.ContainerUpdate
	updated chan struct{} // a value per UpdateFn call
}

func (rt *runtime) syncFn(ctx context.Context, cb upstream.SyncCB) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	_, err := cb(ctx, rt.pods, rt.ctrs)
	return err
}

func (rt *runtime) dropInSyncFn(ctx context.Context, cb adaptation.SyncCB) error {
	return rt.syncFn(ctx, upstream.SyncCB(cb))
}

func (rt *runtime) updateFn(_ context.Context, u []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) {
	rt.mu.Lock()
	rt.updates = append(rt.updates, u...)
	rt.mu.Unlock()
	select {
	case rt.updated <- struct{}{}:
	default:
	}
	return nil, nil
}

// setup is what a test's NRI is configured with.
type setup struct {
	validator *validator.DefaultValidatorConfig
	builtins  []*builtin.BuiltinPlugin
	pluginDir string // "" : an empty one
	confDir   string
	metrics   upstream.Metrics
	dropInOpt []adaptation.Option
}

// env is one NRI, started, with its classic socket.
type env struct {
	nriAPI
	sock string
	rt   *runtime
}

// tempDir is a short temporary directory (unix socket paths are short).
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "nri-a-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// start starts the implementation i with s and the runtime rt.
func start(t *testing.T, i impl, s setup, rt *runtime) *env {
	t.Helper()
	if rt == nil {
		rt = &runtime{}
	}
	rt.updated = make(chan struct{}, 64)
	dir := tempDir(t)
	sock := filepath.Join(dir, "nri.sock")
	pluginDir, confDir := s.pluginDir, s.confDir
	if pluginDir == "" {
		pluginDir = filepath.Join(dir, "plugins")
	}
	if confDir == "" {
		confDir = filepath.Join(dir, "conf")
	}
	var a nriAPI
	var err error
	switch i {
	case upstreamImpl:
		opts := []upstream.Option{upstream.WithSocketPath(sock), upstream.WithPluginPath(pluginDir), upstream.WithPluginConfigPath(confDir)}
		if s.validator != nil {
			opts = append(opts, upstream.WithDefaultValidator(s.validator))
		}
		if len(s.builtins) > 0 {
			opts = append(opts, upstream.WithBuiltinPlugins(s.builtins...))
		}
		if s.metrics != nil {
			opts = append(opts, upstream.WithMetrics(s.metrics))
		}
		a, err = upstream.New("test-runtime", "1.0", rt.syncFn, rt.updateFn, opts...)
	case dropIn:
		// No gRPC endpoint unless the test names a configuration.
		opts := []adaptation.Option{adaptation.WithSocketPath(sock), adaptation.WithPluginPath(pluginDir), adaptation.WithPluginConfigPath(confDir),
			adaptation.WithConfigFile(writeConfig(t, dir, ""))}
		if s.validator != nil {
			opts = append(opts, adaptation.WithDefaultValidator(s.validator))
		}
		if len(s.builtins) > 0 {
			opts = append(opts, adaptation.WithBuiltinPlugins(s.builtins...))
		}
		if s.metrics != nil {
			opts = append(opts, adaptation.WithMetrics(s.metrics))
		}
		opts = append(opts, s.dropInOpt...)
		a, err = adaptation.New("test-runtime", "1.0", rt.dropInSyncFn, adaptation.UpdateFn(rt.updateFn), opts...)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatalf("%s: Start: %v", i, err)
	}
	t.Cleanup(a.Stop)
	return &env{nriAPI: a, sock: sock, rt: rt}
}

// writeConfig writes nri-grpc's configuration into dir: body, with the gRPC
// socket in dir unless body sets one.
func writeConfig(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, "nri-grpc.toml")
	cfg := "[server]\nsocket = " + strconv.Quote(filepath.Join(dir, "nri-grpc.sock")) +
		"\nplugin_socket_dir = " + strconv.Quote(filepath.Join(dir, "plugins.d")) + "\n" + body
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// base is what every test plugin embeds: its Synchronize says that the
// runtime got to it.
type base struct {
	once   sync.Once
	synced chan struct{}
}

func newBase() base { return base{synced: make(chan struct{})} }

// Synchronize implements stub.SynchronizeInterface.
func (b *base) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	b.once.Do(func() { close(b.synced) })
	return nil, nil
}

func (b *base) syncedC() <-chan struct{} { return b.synced }

// syncer is a test plugin.
type syncer interface{ syncedC() <-chan struct{} }

// stubPlugin starts p as an upstream pkg/stub plugin on e's classic socket
// and waits until the runtime has it registered.
func stubPlugin(t *testing.T, e *env, name, idx string, p syncer, opts ...stub.Option) stub.Stub {
	t.Helper()
	opts = append([]stub.Option{stub.WithPluginName(name), stub.WithPluginIdx(idx), stub.WithSocketPath(e.sock), stub.WithLogger(quietLog{})}, opts...)
	st, err := stub.New(p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := st.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Stop(); cancel() })
	select {
	case <-p.syncedC():
	case <-time.After(wait()):
		t.Fatalf("plugin %s-%s was not synchronized", idx, name)
	}
	e.waitRegistered(t, idx+"-"+name)
	return st
}

// waitRegistered waits until the runtime relays events to plugin full.
// Upstream adds a plugin to its list after its Synchronize, under the lock
// BlockPluginSync takes; the drop-in's server lists it READY.
func (e *env) waitRegistered(t *testing.T, full string) {
	t.Helper()
	switch a := e.nriAPI.(type) {
	case *upstream.Adaptation:
		a.BlockPluginSync().Unblock()
	case *adaptation.Adaptation:
		timeout := time.After(wait())
		for {
			changed := a.Server().PluginsChanged()
			if ready(a, full) {
				return
			}
			select {
			case <-changed:
			case <-timeout:
				t.Fatalf("plugin %s is not ready", full)
			}
		}
	}
}

// ready reports whether plugin full is registered and ready in a's server.
func ready(a *adaptation.Adaptation, full string) bool {
	for _, p := range a.Server().Plugins() {
		if p.GetPlugin().GetIndex()+"-"+p.GetPlugin().GetName() == full && p.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY {
			return true
		}
	}
	return false
}

// wait bounds a test's waits for events (NRI_TEST_WAIT scales it).
func wait() time.Duration {
	if v, err := time.ParseDuration(os.Getenv("NRI_TEST_WAIT")); err == nil {
		return v
	}
	return 30 * time.Second
}

func quote(s string) string       { return strconv.Quote(s) }
func contains(s, sub string) bool { return strings.Contains(s, sub) }
