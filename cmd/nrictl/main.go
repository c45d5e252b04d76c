// Command nrictl is the operator CLI of nri-grpc. It talks to nrid over its
// unix socket:
//
//	nrictl plugins            registered plugins, state and call counters
//	nrictl state              the pods and containers nrid has cached
//	nrictl watch              live dispatch records (every event, every plugin call)
//	nrictl deprecations       deprecated behaviours seen from plugins
//	nrictl dry-run            evaluate a CreateContainer/UpdateContainer with dry-run plugins
//	nrictl simulate           drive a synthetic pod lifecycle through the plugins
//	nrictl health             gRPC health of nrid (for probes)
//	nrictl version            version, commit and Go version of nrictl (also --version)
//	nrictl new                write a new plugin project (Go, Python, TypeScript, Rust)
//
// Output is a readable table by default and protojson with -o json.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// DefaultSocket is nrid's default socket.
const DefaultSocket = "/var/run/nri/nri-grpc.sock"

// EnvSocket overrides the default socket.
const EnvSocket = "NRICTL_SOCKET"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode reports err and maps it to the exit status: 0 success, 2 usage,
// 1 anything else.
func exitCode(err error, stderr io.Writer) int {
	var ue usageError
	var qe quietError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "nrictl:", err)
		return 2
	case errors.As(err, &qe):
		return qe.code
	default:
		fmt.Fprintln(stderr, "nrictl:", err)
		return 1
	}
}

// usageError is a command line mistake (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// quietError ends nrictl with a status after the command already said why.
type quietError struct{ code int }

func (e quietError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// globals are the options every command has.
type globals struct {
	socket  string
	output  string
	timeout time.Duration
	stdout  io.Writer
	stderr  io.Writer
	command string // the command running
}

// flags returns the flag set of a command with the global flags on it, so
// they work before and after the command name.
func (g *globals) flags(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("nrictl "+name, flag.ContinueOnError)
	fs.SetOutput(g.stderr)
	fs.StringVar(&g.socket, "socket", g.socket, "nrid's unix socket (env "+EnvSocket+")")
	fs.StringVar(&g.output, "o", g.output, "output format: table or json")
	fs.StringVar(&g.output, "output", g.output, "output format: table or json")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "deadline of each call (0: none)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: nrictl %s\n\nflags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

func (g *globals) json() bool { return g.output == "json" }

// command is one nrictl subcommand.
type command struct {
	name    string
	usage   string
	summary string
	run     func(ctx context.Context, g *globals, args []string) error
}

var commands = []command{
	{"plugins", "plugins [-wide]", "list registered plugins with their state and call counters", runPlugins},
	{"state", "state [-pod ID] [-no-trunc]", "show the pods and containers nrid has cached", runState},
	{"watch", "watch [-event E]... [-plugin P] [-pod ID] [-count N]", "stream dispatch records live", runWatch},
	{"deprecations", "deprecations", "list deprecated behaviours seen from plugins", runDeprecations},
	{"dry-run", "dry-run [-event create|update] [-pod-file F] [-container-file F] [-resources-file F] [synthetic flags]",
		"evaluate a CreateContainer or UpdateContainer with the plugins that support dry runs", runDryRun},
	{"simulate", "simulate [-pods N] [-containers M] [-name NAME] [-annotation k=v]...",
		"drive synthetic pods through a whole lifecycle (refused while a runtime is attached)", runSimulate},
	{"health", "health [-service S] [-live]", "check nrid's gRPC health (exit status 0 when serving)", runHealth},
	{"version", "version", "print the version, commit and Go version of nrictl (also --version)", runVersion},
	{"new", "new --lang go|python|typescript|rust [--name NAME] [--index NN] [--module M] [--sdk DIR] DIR",
		"write a new plugin project from a template: plugin, test, README, Containerfile, DaemonSet", runNew},
}

// run is nrictl without the process around it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	g := &globals{socket: DefaultSocket, output: "table", timeout: 10 * time.Second, stdout: stdout, stderr: stderr}
	if s := getenv(EnvSocket); s != "" {
		g.socket = s
	}
	fs := g.flags("[flags] <command>", "[flags] <command> [command flags]")
	showVersion := fs.Bool("version", false, "print the version (as the version command) and exit")
	fs.Usage = func() { usage(fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if *showVersion {
		g.command = "version"
		return runVersion(ctx, g, fs.Args())
	}
	if fs.NArg() == 0 {
		usage(fs)
		return usagef("no command given")
	}
	name := fs.Arg(0)
	for _, c := range commands {
		if c.name != name {
			continue
		}
		g.command = c.name
		err := c.run(ctx, g, fs.Args()[1:])
		if err != nil && !errors.As(err, new(usageError)) && !errors.As(err, new(quietError)) && !errors.Is(err, flag.ErrHelp) {
			err = explain(err, g.socket)
		}
		return err
	}
	if name == "help" {
		usage(fs)
		return nil
	}
	return usagef("unknown command %q (try nrictl help)", name)
}

func usage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintln(w, "usage: nrictl [flags] <command> [command flags]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nflags (also accepted after the command):")
	fs.PrintDefaults()
	fmt.Fprintln(w, "\nRun nrictl <command> -h for the flags of a command.")
}

// parse parses a command's flags and refuses positional arguments.
func parse(fs *flag.FlagSet, g *globals, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	if g.output != "table" && g.output != "json" {
		return usagef("-o %q: use table or json", g.output)
	}
	return nil
}

// callContext bounds one call by the -timeout flag.
func (g *globals) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if g.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, g.timeout)
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// kvFlag is a repeatable key=value flag.
type kvFlag struct {
	keys []string
	vals map[string]string
}

func (f *kvFlag) String() string {
	var parts []string
	for _, k := range f.keys {
		parts = append(parts, k+"="+f.vals[k])
	}
	return strings.Join(parts, ",")
}

func (f *kvFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not key=value", v)
	}
	if f.vals == nil {
		f.vals = map[string]string{}
	}
	if _, dup := f.vals[k]; !dup {
		f.keys = append(f.keys, k)
	}
	f.vals[k] = val
	return nil
}

func (f *kvFlag) m() map[string]string {
	out := make(map[string]string, len(f.keys))
	for k, v := range f.vals {
		out[k] = v
	}
	return out
}
