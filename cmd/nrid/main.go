// Command nrid is the nri-grpc daemon: the NRI server over gRPC.
//
// nrid serves RuntimeService (plugins register), AdaptationService (a
// runtime drives it), AdminService (operators), gRPC health and server
// reflection on its unix socket and, when configured, on TCP with TLS.
// Callers are authenticated (peer credentials, client certificates, bearer
// tokens) and authorized by the policy of its configuration file.
//
// Usage:
//
//	nrid [--config FILE] [--check] [--socket PATH] [--plugin-socket-dir DIR]
//	     [--tcp-address ADDR] [--log-level LEVEL] [--node-name NAME]
//	     [--runtime-required] [--takeover] [--version]
//
// Every configuration key is documented in deploy/nrid.toml. On SIGTERM or
// SIGINT nrid stops gracefully: plugins get Shutdown("server stopping"),
// calls in flight may finish within server.stop_timeout. Started with
// --takeover while another nrid runs with the same server.state_dir, nrid
// takes over its sockets and its connection to the runtime, and the old one
// stops: an upgrade without downtime (docs/operations.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/nri-grpc/nri-grpc/cmd/nrid/internal/config"
	"github.com/nri-grpc/nri-grpc/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	go func() {
		// After the first signal, the default handling returns: a second
		// one ends nrid at once instead of waiting for the graceful stop.
		<-ctx.Done()
		stop()
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "nrid:", err)
		os.Exit(1)
	}
}

// run is nrid: it parses the flags and the configuration, serves until ctx
// is done, and stops gracefully. It returns an error, without serving
// anything, when the configuration is invalid.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("nrid", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (TOML, see deploy/nrid.toml); none: the defaults")
	check := fs.Bool("check", false, "check the configuration and exit")
	showVersion := fs.Bool("version", false, "print the version and exit")
	takeover := fs.Bool("takeover", false, "take over the sockets and the runtime connection of the nrid running with the same server.state_dir, if any (an upgrade without downtime); start afresh if none runs")
	var o config.Overrides
	str := func(name, usage string, dst **string) {
		fs.Func(name, usage, func(v string) error { *dst = &v; return nil })
	}
	str("socket", "unix socket to serve on (server.socket, default "+config.DefaultSocket+")", &o.Socket)
	str("plugin-socket-dir", "directory of plugin endpoints (server.plugin_socket_dir)", &o.PluginSocketDir)
	str("tcp-address", "TCP address to serve on with TLS (tcp.address)", &o.TCPAddress)
	str("log-level", "debug, info, warn or error (log.level)", &o.LogLevel)
	str("node-name", "node name sent to plugins (server.node_name)", &o.NodeName)
	fs.BoolFunc("runtime-required", "NOT_SERVING until a runtime is attached (runtime.required)", func(v string) error {
		b := v == "true"
		if v != "true" && v != "false" {
			return fmt.Errorf("%q is not true or false", v)
		}
		o.RuntimeRequired = &b
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *showVersion {
		fmt.Fprintln(stdout, "nrid", version.Server(), "NRI", version.NRI())
		return nil
	}
	cfg, err := config.Load(*cfgPath, o)
	if err != nil {
		return err
	}
	if *check {
		fmt.Fprintln(stdout, "configuration OK")
		return nil
	}
	d, err := newDaemon(ctx, cfg, stdout, stderr)
	if err != nil {
		return err
	}
	d.takeover = *takeover
	return d.serve(ctx)
}
