// Command nrid is the nri-grpc daemon: the NRI server over gRPC.
//
// nrid serves RuntimeService (plugins register), AdaptationService (a
// runtime drives it), AdminService (operators), gRPC health and server
// reflection on its unix socket and, when configured, on TCP with TLS.
// Callers are authenticated (peer credentials, client certificates, bearer
// tokens) and authorized by the policy of its configuration file. With
// observability.metrics_address it serves Prometheus metrics and the HTTP
// health probes /readyz and /livez, for probes that cannot open the socket.
//
// Usage:
//
//	nrid [--config FILE] [--check] [--socket PATH] [--plugin-socket-dir DIR]
//	     [--tcp-address ADDR] [--log-level LEVEL] [--node-name NAME]
//	     [--runtime-required] [--takeover] [--version] [--help]
//
// Every configuration key is documented in deploy/nrid.toml. --check checks
// the file and warns about each file of the launch directories that nrid
// would skip. --version prints the version, the commit (and whether the tree
// had uncommitted changes) and the Go version (internal/version). On SIGTERM or
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

	"github.com/nri-grpc/nri-grpc/config"
	"github.com/nri-grpc/nri-grpc/internal/version"
	"github.com/nri-grpc/nri-grpc/supervisor"
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
	if err != nil {
		fmt.Fprintln(os.Stderr, "nrid:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a command line mistake (exit status 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() + " (nrid --help lists the flags)" }

func (e usageError) Unwrap() error { return e.err }

// docsURL is where the operator's guide lives.
const docsURL = "https://github.com/nri-grpc/nri-grpc/blob/main/docs/operations.md"

// flags are nrid's command line.
type flags struct {
	fs          *flag.FlagSet
	cfgPath     string
	check       bool
	showVersion bool
	takeover    bool
	overrides   config.Overrides
}

// newFlags defines nrid's flags.
func newFlags() *flags {
	f := &flags{fs: flag.NewFlagSet("nrid", flag.ContinueOnError)}
	fs, o := f.fs, &f.overrides
	// The flag package's own messages would repeat the error run returns.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&f.cfgPath, "config", "", "configuration `file` (TOML; every key in deploy/nrid.toml); none: the defaults")
	fs.BoolVar(&f.check, "check", false, "check the configuration (and the launch directories) and exit")
	fs.BoolVar(&f.showVersion, "version", false, "print the version, commit and Go version and exit")
	fs.BoolVar(&f.takeover, "takeover", false, "take over the sockets and the runtime connection of the nrid running with the same server.state_dir, if any (an upgrade without downtime); start afresh if none runs")
	str := func(name, usage string, dst **string) {
		fs.Func(name, usage, func(v string) error { *dst = &v; return nil })
	}
	str("socket", "unix `path` to serve on (server.socket, default "+config.DefaultSocket+")", &o.Socket)
	str("plugin-socket-dir", "`directory` of plugin endpoints (server.plugin_socket_dir)", &o.PluginSocketDir)
	str("tcp-address", "`host:port` to serve on with TLS (tcp.address)", &o.TCPAddress)
	str("log-level", "log `level`: debug, info, warn or error (log.level)", &o.LogLevel)
	str("node-name", "node `name` sent to plugins (server.node_name)", &o.NodeName)
	fs.BoolFunc("runtime-required", "NOT_SERVING until a runtime is attached (runtime.required)", func(v string) error {
		b := v == "true"
		if v != "true" && v != "false" {
			return fmt.Errorf("%q is not true or false", v)
		}
		o.RuntimeRequired = &b
		return nil
	})
	return f
}

// help writes nrid --help: what nrid is, where its configuration is
// documented, examples, the flags and the documentation.
func (f *flags) help(w io.Writer) {
	fmt.Fprint(w, `nrid is the nri-grpc daemon: containerd's Node Resource Interface (NRI) as a
gRPC service. It serves plugins (RuntimeService), a runtime (AdaptationService,
or a classic runtime through the bridge) and operators (AdminService: nrictl,
grpcurl), with gRPC health and reflection, on a unix socket (and on TCP with TLS
when tcp.address is set).

usage: nrid [--config FILE] [--check | --version | --takeover] [flags]

Configuration: one TOML file, --config; without it nrid runs with the defaults.
Every key is documented, with its default, in deploy/nrid.toml of the source
(the container image ships it as /etc/nri/nrid.toml). An unknown key or a bad value
stops nrid before it serves anything. The flags below override the file.

examples:
  nrid --config /etc/nri/nrid.toml             serve
  nrid --config /etc/nri/nrid.toml --check     check the file and the launch directories, and exit
  nrid --config /etc/nri/nrid.toml --takeover  upgrade: take over from the running nrid
  nrid --socket /tmp/nri/nrid.sock --plugin-socket-dir /tmp/nri/plugins
                                               try it out without a file (as root)

flags:
`)
	f.fs.VisitAll(func(fl *flag.Flag) {
		name, usage := flag.UnquoteUsage(fl)
		if name != "" {
			name = " " + name
		}
		fmt.Fprintf(w, "  --%s%s\n      %s\n", fl.Name, name, usage)
	})
	fmt.Fprintf(w, "\nOn SIGTERM or SIGINT nrid stops gracefully (server.stop_timeout).\n"+
		"Operating nrid (nrictl, grpcurl, probes, metrics, upgrades): %s\n", docsURL)
}

// run is nrid: it parses the flags and the configuration, serves until ctx
// is done, and stops gracefully. It returns an error, without serving
// anything, when the configuration is invalid.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags()
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.help(stdout)
			return nil
		}
		return usageError{err}
	}
	if f.fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", f.fs.Args())}
	}
	if f.showVersion {
		return version.Get().Write(stdout, "nrid")
	}
	cfg, err := config.Load(f.cfgPath, f.overrides)
	if err != nil {
		return err
	}
	if f.check {
		warnings := launchWarnings(cfg)
		for _, w := range warnings {
			fmt.Fprintln(stderr, "nrid: warning:", w)
		}
		if len(warnings) > 0 {
			fmt.Fprintf(stdout, "configuration OK (%d warning(s) above)\n", len(warnings))
		} else {
			fmt.Fprintln(stdout, "configuration OK")
		}
		return nil
	}
	d, err := newDaemon(ctx, cfg, stdout, stderr)
	if err != nil {
		return err
	}
	d.takeover = f.takeover
	return d.serve(ctx)
}

// launchWarnings are the files of the launch directories (launch.plugin_dir,
// bridge.classic_plugin_dir) that nrid will not launch, each with the
// reason, and a directory that does not exist.
func launchWarnings(cfg *config.Config) []string {
	var out []string
	for _, d := range []struct{ key, dir, confDir string }{
		{"launch.plugin_dir", cfg.Launch.PluginDir, cfg.Launch.ConfigDir},
		{"bridge.classic_plugin_dir", cfg.Bridge.ClassicPluginDir, cfg.Bridge.ClassicConfigDir},
	} {
		if d.dir == "" {
			continue
		}
		_, errs := supervisor.Survey(d.dir, d.confDir)
		for _, err := range errs {
			out = append(out, d.key+": "+err.Error())
		}
	}
	return out
}
