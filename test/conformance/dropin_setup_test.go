package conformance_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	classic "github.com/containerd/nri/pkg/adaptation"
	v1alpha1 "github.com/containerd/nri/pkg/api"

	dropin "github.com/nri-grpc/nri-grpc/adaptation"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// The classic-dropin path: nri-grpc's drop-in for pkg/adaptation is the
// runtime's NRI, the same upstream pkg/stub plugins connect to its classic
// socket. The scenarios drive it exactly as they drive upstream on the
// direct path.

// timeoutsMu serializes setting the drop-in's process-wide timeouts and
// creating an Adaptation, which copies them: per-runtime timeouts for
// scenarios running in parallel.
var timeoutsMu sync.Mutex

// startDropIn starts the drop-in for e with the runtime's callbacks.
func (e *classicEnv) startDropIn(t conformance.T, o conformance.Options, dir, sock string,
	syncFn func(context.Context, classic.SyncCB) error,
	updateFn func(context.Context, []*v1alpha1.ContainerUpdate) ([]*v1alpha1.ContainerUpdate, error),
	cm *classicMetrics, logger *slog.Logger) (*classicEnv, error) {
	t.Helper()
	cfg := filepath.Join(dir, "nri-grpc.toml")
	body := "[server]\nsocket = " + strconv.Quote(filepath.Join(dir, "nri-grpc.sock")) +
		"\nplugin_socket_dir = " + strconv.Quote(filepath.Join(dir, "p")) + "\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := []dropin.Option{
		dropin.WithSocketPath(sock),
		dropin.WithPluginPath(filepath.Join(dir, "no-plugins")),
		dropin.WithPluginConfigPath(filepath.Join(dir, "no-conf")),
		dropin.WithMetrics(cm),
		dropin.WithConfigFile(cfg),
		dropin.WithLogger(logger),
	}
	if c := defaultValidator(o); c != nil {
		opts = append(opts, dropin.WithDefaultValidator(c))
	}
	if o.DisableExternalConnections {
		opts = append(opts, dropin.WithDisabledExternalConnections())
	}
	timeoutsMu.Lock()
	dropin.SetPluginRegistrationTimeout(orDefault(o.RegistrationTimeout, dropin.DefaultPluginRegistrationTimeout))
	dropin.SetPluginRequestTimeout(orDefault(o.RequestTimeout, dropin.DefaultPluginRequestTimeout))
	d, err := dropin.New(o.RuntimeName, o.RuntimeVersion, dropin.SyncFn(func(ctx context.Context, cb dropin.SyncCB) error {
		return syncFn(ctx, classic.SyncCB(cb))
	}), dropin.UpdateFn(updateFn), opts...)
	dropin.SetPluginRegistrationTimeout(dropin.DefaultPluginRegistrationTimeout)
	dropin.SetPluginRequestTimeout(dropin.DefaultPluginRequestTimeout)
	timeoutsMu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := d.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(d.Stop)
	e.d, e.srv, e.plugSock = d, d.Server(), sock
	return e, nil
}

// orDefault is d, or def when d is zero.
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
