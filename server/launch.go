package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc/codes"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Environment variables of pre-launched gRPC plugins (docs/PROTOCOL.md §14).
const (
	// EnvPluginEndpoint is the unix socket path the plugin must listen on.
	EnvPluginEndpoint = "NRI_GRPC_PLUGIN_ENDPOINT"
	// EnvServerAddress is the server's gRPC target ("unix:///path").
	EnvServerAddress = "NRI_GRPC_SERVER_ADDRESS"
	// EnvPluginName is the plugin's name.
	EnvPluginName = "NRI_GRPC_PLUGIN_NAME"
	// EnvPluginIndex is the plugin's two-digit index.
	EnvPluginIndex = "NRI_GRPC_PLUGIN_IDX"
)

// launchPath is the default PATH of launched plugins.
const launchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// launchSlot binds a pre-launched plugin's endpoint to its identity and
// configuration.
type launchSlot struct {
	name, idx string
	config    []byte
}

// LaunchConfig configures the pre-launched gRPC plugins.
type LaunchConfig struct {
	// PluginDir holds the executables, named "NN-name".
	PluginDir string
	// ConfigDir holds their configuration, "NN-name.conf" or "name.conf".
	ConfigDir string
	// ServerAddress is the gRPC target plugins register with
	// ("unix:///var/run/nri/nri-grpc.sock").
	ServerAddress string
}

// Launcher starts the processes of pre-launched plugins and keeps them
// running. *supervisor.Supervisor of package supervisor (nrid's: restarts
// with backoff, output to the log) implements it.
type Launcher interface {
	// LaunchDir starts every plugin executable of dir ("NN-name"), with its
	// configuration from confDir ("NN-name.conf" or "name.conf"), and keeps
	// it running, restarting it when it exits. setup is called once per
	// plugin before its first start: it returns the plugin's complete
	// environment and a function, which may be nil, to call before every
	// start. Files that are not valid plugins, and plugins that fail to
	// start, are reported in the returned error; the others still start.
	LaunchDir(ctx context.Context, dir, confDir string,
		setup func(index, name string, config []byte) (env []string, beforeStart func())) error
}

// Launch starts every plugin of cfg.PluginDir with l and keeps it running:
// each gets its endpoint (a socket in the plugin socket directory) and the
// server's address in its environment, registers like any remote plugin,
// and is bound to the identity "launch:NN-name" and its configuration by
// that endpoint. Files that are not valid plugins are reported in the
// returned error and skipped; the others still start.
func (s *Server) Launch(ctx context.Context, l Launcher, cfg LaunchConfig) error {
	return l.LaunchDir(ctx, cfg.PluginDir, cfg.ConfigDir, func(idx, name string, config []byte) ([]string, func()) {
		endpoint := filepath.Join(s.opts.pluginSocketDir, idx+"-"+name+".sock")
		s.mu.Lock()
		if s.launched == nil {
			s.launched = map[string]launchSlot{}
		}
		s.launched[endpoint] = launchSlot{name: name, idx: idx, config: config}
		s.mu.Unlock()
		env := []string{
			EnvPluginEndpoint + "=" + endpoint,
			EnvServerAddress + "=" + cfg.ServerAddress,
			EnvPluginName + "=" + name,
			EnvPluginIndex + "=" + idx,
			"PATH=" + launchPath,
		}
		// A stale socket of a crashed instance would make the new one fail
		// to listen.
		return env, func() { _ = os.Remove(endpoint) }
	})
}

// launchedAt returns the launch slot an endpoint belongs to.
// Launch's endpoints are clean absolute paths; whether an endpoint is
// acceptable at all is the Dialer's to say.
func (s *Server) launchedAt(endpoint string) (launchSlot, bool) {
	path, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok || !filepath.IsAbs(path) {
		return launchSlot{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, ok := s.launched[filepath.Clean(path)]
	return slot, ok
}

// bindLaunched applies the launch slot of a registration's endpoint: the
// plugin must register under the slot's name and index, and gets the slot's
// identity and configuration.
func (s *Server) bindLaunched(reg *Registration, id *Identity) error {
	slot, ok := s.launchedAt(reg.Endpoint)
	if !ok {
		return nil
	}
	if !id.Unix || id.UID != uint32(os.Getuid()) {
		return refusal(codes.PermissionDenied, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_NOT_PERMITTED, "endpoint",
			"endpoint: %s is a launch slot; only the server's own uid %d may register it, not %q", reg.Endpoint, os.Getuid(), id.Name)
	}
	if reg.Name != slot.name || reg.Index != slot.idx {
		return refusal(codes.PermissionDenied, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_NOT_PERMITTED, "endpoint",
			"endpoint: %s is the launch slot of %s-%s, not of %s-%s", reg.Endpoint, slot.idx, slot.name, reg.Index, reg.Name)
	}
	reg.Kind = nriv1beta1.PluginKind_PLUGIN_KIND_LAUNCHED
	reg.Config = string(slot.config)
	reg.Identity = "launch:" + slot.idx + "-" + slot.name
	id.Name = reg.Identity
	return nil
}
