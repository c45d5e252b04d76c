package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// LaunchDir starts every plugin of dir (Discover, with configuration from
// confDir) and supervises it. setup is called once per plugin, before its
// first start, with its index, name and configuration; it returns the
// plugin's complete environment (Spec.Env) and a function, which may be
// nil, called before every start of the plugin, the first one and each
// restart.
//
// Files that are not valid plugins and plugins that fail to start are
// reported in the returned error, joined; the other plugins still start.
//
// LaunchDir makes a Supervisor the server.Launcher of nri-grpc's server
// package, which gives each gRPC plugin its endpoint and the server's
// address in its environment; a caller that needs inherited files or
// OnStart (the bridge's classic plugins) uses Discover and Start.
func (s *Supervisor) LaunchDir(ctx context.Context, dir, confDir string,
	setup func(index, name string, config []byte) (env []string, beforeStart func())) error {
	plugins, errs := Discover(dir, confDir)
	for _, p := range plugins {
		env, beforeStart := setup(p.Index, p.Name, p.Config)
		_, err := s.Start(ctx, Spec{
			Name:  p.Name,
			Index: p.Index,
			Path:  p.Path,
			Env:   env,
			Prepare: func() ([]*os.File, func(), error) {
				if beforeStart != nil {
					beforeStart()
				}
				return nil, nil, nil
			},
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("launching %s: %w", p.FullName(), err))
		}
	}
	return errors.Join(errs...)
}
