package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/grpc/codes"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/supervisor"
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

// Launch starts every plugin of cfg.PluginDir under sup and keeps it
// running: each gets its endpoint (a socket in the plugin socket directory)
// and the server's address in its environment, registers like any remote
// plugin, and is bound to the identity "launch:NN-name" and its
// configuration by that endpoint. Files that are not valid plugins are
// reported in the returned error and skipped; the others still start.
func (s *Server) Launch(ctx context.Context, sup *supervisor.Supervisor, cfg LaunchConfig) error {
	plugins, errs := supervisor.Discover(cfg.PluginDir, cfg.ConfigDir)
	for _, p := range plugins {
		endpoint := filepath.Join(s.opts.pluginSocketDir, p.FullName()+".sock")
		s.mu.Lock()
		if s.launched == nil {
			s.launched = map[string]launchSlot{}
		}
		s.launched[endpoint] = launchSlot{name: p.Name, idx: p.Index, config: p.Config}
		s.mu.Unlock()
		_, err := sup.Start(ctx, supervisor.Spec{
			Name:  p.Name,
			Index: p.Index,
			Path:  p.Path,
			Env: []string{
				EnvPluginEndpoint + "=" + endpoint,
				EnvServerAddress + "=" + cfg.ServerAddress,
				EnvPluginName + "=" + p.Name,
				EnvPluginIndex + "=" + p.Index,
				"PATH=" + launchPath,
			},
			Prepare: func() ([]*os.File, func(), error) {
				// A stale socket of a crashed instance would make the new one
				// fail to listen.
				_ = os.Remove(endpoint)
				return nil, nil, nil
			},
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("launching %s: %w", p.FullName(), err))
		}
	}
	return errors.Join(errs...)
}

// launchedAt returns the launch slot an endpoint belongs to.
func (s *Server) launchedAt(endpoint string) (launchSlot, bool) {
	path, err := s.checkEndpoint(endpoint)
	if err != nil {
		return launchSlot{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, ok := s.launched[path]
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
