package supervisor_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/nri-grpc/nri-grpc/supervisor"
)

// Launching classic plugins the classic way: the three NRI_ variables only,
// and a fresh socketpair per start whose peer end becomes fd 3. Prepare keeps
// the local end in the closure; OnStart, which always follows that Prepare
// call, attaches it.
func Example_classic() {
	ctx := context.Background()
	sup := supervisor.New(supervisor.WithLogger(slog.Default()))
	defer func() {
		if err := sup.Stop(ctx); err != nil {
			slog.Warn("stopping the plugins", "err", err)
		}
	}()

	plugins, errs := supervisor.Discover("/opt/nri/plugins", "/etc/nri/conf.d")
	for _, err := range errs {
		slog.Warn("skipping plugin", "err", err)
	}
	for _, pl := range plugins {
		var local net.Conn
		spec := supervisor.Spec{
			Name:  pl.Name,
			Index: pl.Index,
			Path:  pl.Path,
			Env: []string{
				"NRI_PLUGIN_NAME=" + pl.Name,
				"NRI_PLUGIN_IDX=" + pl.Index,
				"NRI_PLUGIN_SOCKET=3",
			},
			Prepare: func() ([]*os.File, func(), error) {
				fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					return nil, nil, err
				}
				f := os.NewFile(uintptr(fds[0]), "local")
				defer f.Close()
				peer := os.NewFile(uintptr(fds[1]), "peer")
				c, err := net.FileConn(f)
				if err != nil {
					peer.Close()
					return nil, nil, err
				}
				local = c
				return []*os.File{peer}, func() { c.Close() }, nil
			},
			OnStart: func(ctx context.Context, s supervisor.Started) {
				conn := local
				go func() {
					// Serve the plugin on conn until ctx is done (the process
					// exited) ...
					<-ctx.Done()
					_ = conn
				}()
			},
		}
		if _, err := sup.Start(ctx, spec); err != nil {
			fmt.Println("skipping", pl.FullName(), err)
		}
	}
}
