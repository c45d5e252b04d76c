package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	api "github.com/containerd/nri/pkg/api"

	dropin "github.com/nri-grpc/nri-grpc/adaptation"
)

// adaptationAPI is what a runtime (containerd's internal/nri) calls on
// pkg/adaptation once it has one: upstream's *adaptation.Adaptation and the
// drop-in's (github.com/nri-grpc/nri-grpc/adaptation) both satisfy it, their
// request and response types being the same Go types (the drop-in's are
// aliases of upstream's pkg/api). The dropin scenario's driver is written
// once against it.
type adaptationAPI = dropin.Interface

var _ adaptationAPI = (*adaptation.Adaptation)(nil)

// Implementations of the pkg/adaptation API, as named by the runtime role's
// -impl flag.
const (
	implUpstream = "upstream"
	implDropin   = "dropin"
)

// runtimeNRI is one implementation of the pkg/adaptation API, created with
// New and not started yet.
type runtimeNRI struct {
	adaptationAPI
	// plugins is its metrics sink (WithMetrics): it counts the plugins
	// events are dispatched to.
	plugins *pluginCounter
}

// waitPlugins waits until events are dispatched to n plugins.
func (r runtimeNRI) waitPlugins(n int) error { return r.plugins.wait(n, procWait) }

// pluginCounter is a runtime's Metrics (upstream's interface, which the
// drop-in's shares) that keeps the plugin count only: both implementations
// report it once a plugin is synchronized and dispatched to (upstream when
// it joins its plugin list; the drop-in when its server promotes it).
type pluginCounter struct {
	mu      sync.Mutex
	n       int
	changed chan struct{} // closed and replaced at every change
}

func newPluginCounter() *pluginCounter { return &pluginCounter{changed: make(chan struct{})} }

// RecordPluginInvocation implements Metrics: nothing is recorded.
func (*pluginCounter) RecordPluginInvocation(string, string, error) {}

// RecordPluginLatency implements Metrics: nothing is recorded.
func (*pluginCounter) RecordPluginLatency(string, string, time.Duration) {}

// RecordPluginAdjustments implements Metrics: nothing is recorded.
func (*pluginCounter) RecordPluginAdjustments(string, string, *api.ContainerAdjustment, int, int) {}

// UpdatePluginCount implements Metrics: the count of active plugins.
func (c *pluginCounter) UpdatePluginCount(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = n
	close(c.changed)
	c.changed = make(chan struct{})
}

// wait waits until the count is at least n, at most timeout.
func (c *pluginCounter) wait(n int, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		c.mu.Lock()
		have, changed := c.n, c.changed
		c.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-changed:
		case <-t.C:
			return fmt.Errorf("%d plugin(s) dispatched to after %v, want %d", have, timeout, n)
		}
	}
}

var _ adaptation.Metrics = (*pluginCounter)(nil)

// adaptationPaths are where one runtime's NRI lives, as containerd
// configures it: its classic socket, an empty plugin directory and plugin
// configuration directory, and (the drop-in only) nri-grpc's configuration
// file, whose [server] socket is where gRPC plugins register.
type adaptationPaths struct {
	socket           string // WithSocketPath
	pluginPath       string // WithPluginPath: an empty directory
	pluginConfigPath string // WithPluginConfigPath: an empty directory
	config           string // the drop-in's nri-grpc configuration file
	grpcSocket       string // its [server] socket
	pluginSocketDir  string // its [server] plugin_socket_dir
}

// adaptationPathsIn names the paths of a runtime in dir.
func adaptationPathsIn(dir string) adaptationPaths {
	return adaptationPaths{
		socket:           filepath.Join(dir, "nri.sock"),
		pluginPath:       filepath.Join(dir, "plugins"),
		pluginConfigPath: filepath.Join(dir, "plugins.d"),
		config:           filepath.Join(dir, "nri-grpc.toml"),
		grpcSocket:       filepath.Join(dir, "nri-grpc.sock"),
		pluginSocketDir:  filepath.Join(dir, "p"),
	}
}

// prepare creates the directories and writes the drop-in's configuration:
// the schema of nrid.toml, with the benchmark's long timeouts.
func (p adaptationPaths) prepare() error {
	for _, d := range []string{p.pluginPath, p.pluginConfigPath, p.pluginSocketDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	toml := fmt.Sprintf(`[server]
socket = %q
plugin_socket_dir = %q
request_timeout = "60s"
registration_timeout = "60s"
node_name = "bench-node"

[log]
level = "warn"
`, p.grpcSocket, p.pluginSocketDir)
	return os.WriteFile(p.config, []byte(toml), 0o600)
}

// newRuntimeNRI creates impl's Adaptation as containerd does: New with the
// runtime's name and version, its synchronization and update callbacks, the
// socket, plugin path and plugin configuration path (and, for the drop-in,
// its configuration file).
func newRuntimeNRI(impl string, p adaptationPaths) (runtimeNRI, error) {
	switch impl {
	case implUpstream:
		return newUpstreamNRI(p)
	case implDropin:
		return newDropinNRI(p)
	}
	return runtimeNRI{}, fmt.Errorf("unknown pkg/adaptation implementation %q", impl)
}

// newUpstreamNRI is upstream pkg/adaptation v0.12.5. The runtime has no
// containers when plugins connect (they connect before any event), so its
// synchronization hands over empty lists; it accepts no unsolicited update.
func newUpstreamNRI(p adaptationPaths) (runtimeNRI, error) {
	syncFn := func(ctx context.Context, cb adaptation.SyncCB) error {
		_, err := cb(ctx, nil, nil)
		return err
	}
	updateFn := func(context.Context, []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) { return nil, nil }
	plugins := newPluginCounter()
	a, err := adaptation.New("bench-runtime", "v1.0.0", syncFn, updateFn,
		adaptation.WithSocketPath(p.socket),
		adaptation.WithPluginPath(p.pluginPath),
		adaptation.WithPluginConfigPath(p.pluginConfigPath),
		adaptation.WithMetrics(plugins),
	)
	if err != nil {
		return runtimeNRI{}, fmt.Errorf("upstream pkg/adaptation: %w", err)
	}
	return runtimeNRI{adaptationAPI: a, plugins: plugins}, nil
}
