package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// runtimeOpts are the flags of `nritest runtime`.
type runtimeOpts struct {
	out          outFlags
	adaptation   string
	pluginSocket string
	pluginDir    string
	nrid         string
	classic      string
	run          string
	bound        time.Duration
	podWait      time.Duration
	podPrefix    string
	idx          string
}

// runRuntime is `nritest runtime`.
func runRuntime(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := &runtimeOpts{}
	fs := flag.NewFlagSet("nritest runtime", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: nritest runtime (--adaptation SOCKET --plugin-dir DIR | --nrid BINARY | --classic SOCKET) [flags]\n\nFlags:")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.adaptation, "adaptation", "", "the AdaptationService socket of the NRI server under test (nrid's --socket)")
	fs.StringVar(&o.pluginSocket, "plugin-socket", "", "its RuntimeService socket, where the test plugins register (default: -adaptation)")
	fs.StringVar(&o.pluginDir, "plugin-dir", "", "its plugin socket directory (nrid's --plugin-socket-dir), where the test plugins serve")
	fs.StringVar(&o.nrid, "nrid", "", "start this nrid binary in a scratch directory and test it (instead of -adaptation)")
	fs.StringVar(&o.classic, "classic", "", "a runtime's classic NRI socket (for example /var/run/nri/nri.sock): register test plugins there and check what it sends")
	fs.StringVar(&o.run, "run", "", "run only the scenarios whose \"Group/Name\" matches this regular expression")
	fs.DurationVar(&o.bound, "bound", 2*time.Minute, "bound on one scenario")
	fs.DurationVar(&o.podWait, "pod-timeout", 0, "with -classic: wait this long for a pod to be created on the node (by the operator or CI) and check its events; 0 skips that check")
	fs.StringVar(&o.podPrefix, "pod-prefix", "nritest", "with -classic: the pods whose events are checked and whose containers are adjusted (by name prefix)")
	fs.StringVar(&o.idx, "idx", "99", "with -classic: the test plugin's index")
	o.out.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	var keep *regexp.Regexp
	if o.run != "" {
		var err error
		if keep, err = regexp.Compile(o.run); err != nil {
			return usageError{fmt.Errorf("runtime: -run: %w", err)}
		}
	}
	switch {
	case o.classic != "":
		return runClassicRuntime(ctx, o, stdout)
	case o.nrid != "":
		stop, err := startNrid(ctx, o)
		if err != nil {
			return err
		}
		defer stop()
	case o.adaptation == "" || o.pluginDir == "":
		fs.Usage()
		return usageError{errors.New("runtime: give -adaptation and -plugin-dir, -nrid or -classic")}
	}
	if o.pluginSocket == "" {
		o.pluginSocket = o.adaptation
	}
	r := &report{Command: "runtime", Name: "adaptation", Subject: "AdaptationService " + o.adaptation + ", plugins on " + o.pluginSocket, Started: time.Now()}
	opts := []conformance.RunOption{
		// One server for every scenario: one at a time.
		conformance.Parallel(1), conformance.Bound(o.bound),
		conformance.SkipScenarios(func(s conformance.ScenarioInfo) string {
			if strings.Contains(s.Name, "Shutdown on server stop") {
				return "stops the server: nritest runtime cannot stop the server under test"
			}
			return ""
		}),
	}
	if keep != nil {
		opts = append(opts, conformance.Select(func(s conformance.ScenarioInfo) bool { return keep.MatchString(s.Group + "/" + s.Name) }))
	}
	r.Report = conformance.Execute(ctx, remoteSetup(remoteConfig{adaptation: o.adaptation, pluginSocket: o.pluginSocket, pluginDir: o.pluginDir}), opts...)
	return finish(r, o.out, stdout)
}

// startNrid starts nrid in a scratch directory (its socket serving both
// AdaptationService and RuntimeService) and fills in o's sockets.
func startNrid(ctx context.Context, o *runtimeOpts) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "nritest-nrid-")
	if err != nil {
		return nil, err
	}
	o.adaptation = filepath.Join(dir, "nrid.sock")
	o.pluginDir = filepath.Join(dir, "plugins")
	logPath := filepath.Join(dir, "nrid.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// The catalog registers some 300 plugins in a few seconds, one
	// identity: no registration rate limit.
	conf := filepath.Join(dir, "nrid.toml")
	if err := os.WriteFile(conf, []byte("[server]\nregister_rate = 0\n"), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(o.nrid, "--config", conf, "--socket", o.adaptation, "--plugin-socket-dir", o.pluginDir, "--log-level", "debug")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("starting nrid: %w", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(conformance.Wait):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logf.Close()
		_ = os.RemoveAll(dir)
	}
	// Wait until nrid accepts connections on its socket.
	deadline := time.Now().Add(conformance.Wait)
	for {
		c, derr := net.Dial("unix", o.adaptation)
		if derr == nil {
			_ = c.Close()
			return stop, nil
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("nrid exited (%v) before serving:\n%s", waitErr, b)
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond): // polling the socket: nrid has no readiness signal to wait on
		}
		if time.Now().After(deadline) {
			stop()
			return nil, errors.New("nrid did not serve its socket in time")
		}
	}
}
