// Command nritest is nri-grpc's conformance tool, built on the scenarios
// of test/conformance (docs/nritest.md):
//
//	nritest plugin [flags] -- CMD [ARGS]   behaviour checks of any plugin binary (gRPC, or classic with --classic)
//	nritest runtime --adaptation SOCKET    the scenario catalog through an NRI server's AdaptationService (a running nrid)
//	nritest runtime --classic SOCKET       what a runtime's classic NRI socket sends (Configure, Synchronize, events)
//	nritest matrix                         the runtime × plugin version table (classic releases and nri-grpc's paths)
//
// Every subcommand prints a table (scenario, result, detail) or, with
// --json, a JSON report, and exits 0 only when nothing failed (1: a
// failure, 2: usage).
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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// usageError is a command line mistake (exit 2).
type usageError struct{ error }

// errFailed says a report holds a failure (exit 1, already reported).
var errFailed = errors.New("a check failed")

// exitCode reports err and maps it to the exit status: 0 success, 1 a
// failed check or an error, 2 usage.
func exitCode(err error, stderr io.Writer) int {
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errFailed):
		return 1
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "nritest:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "nritest:", err)
		return 1
	}
}

const usage = `usage: nritest COMMAND [flags]

  plugin [flags] -- CMD [ARGS]   check a plugin binary's behaviour (gRPC; --classic for ttrpc plugins)
  runtime --adaptation SOCKET    run the scenario catalog through an NRI server's AdaptationService
  runtime --classic SOCKET       check a runtime's classic NRI socket
  matrix                         the runtime x plugin version table
  version                        print the version

"nritest COMMAND -h" lists a command's flags; docs/nritest.md describes the checks.`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return usageError{errors.New("no command")}
	}
	switch args[0] {
	case "plugin":
		return runPlugin(ctx, args[1:], stdout, stderr)
	case "runtime":
		return runRuntime(ctx, args[1:], stdout, stderr)
	case "matrix":
		return runMatrix(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "nritest", version())
		return nil
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	fmt.Fprintln(stderr, usage)
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}
