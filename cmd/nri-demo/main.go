// Command nri-demo shows nri-grpc at work in one command, on a machine with
// nothing but Go:
//
//	go run ./cmd/nri-demo
//
// It starts an NRI server (server.Server with its RuntimeService and
// AdaptationService) on a unix socket in a temporary directory, builds
// three example plugins (examples/device-injector, ulimit-adjuster and
// validator) and runs them as real child processes pointed at that socket,
// then plays a runtime: it drives a pod through its lifecycle with an
// AdaptationService gRPC client and prints, for every event, each plugin
// called and the fields it changed, from the server's dispatch records.
// Nothing on the machine is changed; no root is needed.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
	"github.com/nri-grpc/nri-grpc/internal/grpcreg"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/version"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// wait bounds everything the demo waits for after the build.
const wait = 30 * time.Second

// example is an example plugin the demo runs.
type example struct {
	pkg, name, idx string
	args           []string
	validator      bool
}

var examples = []example{
	{pkg: "device-injector", name: "device-injector", idx: "10"},
	{pkg: "ulimit-adjuster", name: "ulimit-adjuster", idx: "20"},
	{pkg: "validator", name: "validator", idx: "90", args: []string{"-allowed-mount-sources", "/srv"}, validator: true},
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "nri-demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("nri-demo", flag.ContinueOnError)
	keep := fs.Bool("keep", false, "keep the temporary directory (sockets, binaries, plugin logs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "nri-demo-")
	if err != nil {
		return err
	}
	if *keep {
		defer fmt.Fprintf(out, "kept %s\n", dir)
	} else {
		defer func() {
			if err := os.RemoveAll(dir); err != nil {
				fmt.Fprintf(out, "removing %s: %v\n", dir, err)
			}
		}()
	}
	sock, pluginDir, binDir := filepath.Join(dir, "nri.sock"), filepath.Join(dir, "plugins"), filepath.Join(dir, "bin")

	fmt.Fprintf(out, "building the example plugins %s ...\n", names(examples, func(e example) string { return e.pkg }))
	start := time.Now()
	if err := build(ctx, binDir); err != nil {
		return err
	}
	fmt.Fprintf(out, "built in %.1fs\n", time.Since(start).Seconds())

	// The NRI server, as nrid runs it, with a simulated runtime.
	srv, err := server.New(
		server.WithPluginSocketDir(pluginDir),
		server.WithDialer(transport.NewDialer()),
		server.WithRuntime("nri-demo", version.Server()),
		server.WithNodeName("demo-node"),
	)
	if err != nil {
		return err
	}
	if err := srv.SetRuntime(ctx, server.RuntimeInfo{Name: "nri-demo", Version: "v1"}, nil, nil, nil); err != nil {
		return err
	}
	lis, err := sockets.Listen(sock, sockets.DefaultListenOptions)
	if err != nil {
		return err
	}
	gs := grpc.NewServer(append(flowctl.ServerOptions(), grpc.Creds(peercred.Credentials{}), codec.ServerOption())...)
	nriv1beta1.RegisterRuntimeServiceServer(grpcreg.Registrar(gs), srv.RuntimeService())
	nriv1beta1.RegisterAdaptationServiceServer(grpcreg.Registrar(gs), srv.AdaptationService())
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	fmt.Fprintf(out, "NRI server listening on %s\n", sock)

	// The plugins, as separate processes.
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			_ = p.Wait()
		}
	}()
	for _, e := range examples {
		full := e.idx + "-" + e.name
		logFile, err := os.Create(filepath.Join(dir, full+".log"))
		if err != nil {
			return err
		}
		defer func() { _ = logFile.Close() }() // the plugin writes it, through its own descriptor
		cmd := exec.Command(filepath.Join(binDir, e.pkg), append([]string{
			"-name", e.name, "-idx", e.idx,
			"-server", "unix://" + sock,
			"-endpoint", filepath.Join(pluginDir, full+".sock"),
		}, e.args...)...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting %s: %w", full, err)
		}
		procs = append(procs, cmd)
	}
	if err := waitPlugins(ctx, srv, len(examples), dir); err != nil {
		return err
	}
	fmt.Fprintf(out, "plugins registered: %s\n\n", strings.Join(registered(srv), ", "))

	// Play the runtime.
	records := make(chan *nriv1beta1.DispatchRecord, 64)
	stop := srv.Watch(64, func(r *nriv1beta1.DispatchRecord) { records <- r })
	defer stop()
	cc, err := grpc.NewClient("unix://"+sock, append(flowctl.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())...)
	if err != nil {
		return err
	}
	defer cc.Close()
	d := &driver{out: out, rt: nriv1beta1.NewAdaptationServiceClient(cc), records: records}
	if err := d.lifecycle(ctx); err != nil {
		return err
	}

	sctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	_ = srv.Shutdown(sctx)
	fmt.Fprintln(out, "\nserver stopped: every plugin got Shutdown(SERVER_STOPPING); done.")
	return nil
}

// build compiles the examples into dir with one go build.
func build(ctx context.Context, dir string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return errors.New("the go command is not in PATH")
	}
	var pkgs []string
	for _, e := range examples {
		pkgs = append(pkgs, version.Module+"/examples/"+e.pkg)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, goTool, append([]string{"build", "-o", dir + "/"}, pkgs...)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build (run nri-demo inside the nri-grpc module): %w\n%s", err, stderr.String())
	}
	return nil
}

// waitPlugins waits until n plugins are ready.
func waitPlugins(ctx context.Context, srv *server.Server, n int, dir string) error {
	deadline := time.Now().Add(wait)
	for len(registered(srv)) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %v of %d plugins registered within %v; see the logs in %s (use -keep)",
				registered(srv), n, wait, dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// registered lists the ready plugins.
func registered(srv *server.Server) []string {
	var out []string
	for _, p := range srv.Plugins() {
		if p.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY {
			out = append(out, p.GetPlugin().GetIndex()+"-"+p.GetPlugin().GetName())
		}
	}
	return out
}

func names[T any](list []T, f func(T) string) string {
	var out []string
	for _, x := range list {
		out = append(out, f(x))
	}
	return strings.Join(out, ", ")
}

// driver plays the runtime and prints what happened.
type driver struct {
	out     io.Writer
	rt      nriv1beta1.AdaptationServiceClient
	records <-chan *nriv1beta1.DispatchRecord
}

// demoPod is a pod whose annotations ask the example plugins for changes.
func demoPod() *nriv1beta1.PodSandbox {
	return &nriv1beta1.PodSandbox{
		Id: "pod-1", Name: "web", Uid: "d3m0-0001", Namespace: "demo",
		Annotations: map[string]string{
			"devices.noderesource.dev/container.app":    "- {path: /dev/nri-demo0, type: c, major: 1, minor: 3, file_mode: 0666}",
			"mounts.noderesource.dev/pod":               "- {source: /srv/www, destination: /var/www, type: bind, options: [rbind, ro]}",
			"mounts.noderesource.dev/container.sidecar": "- {source: /etc/ssh, destination: /keys, type: bind, options: [rbind, ro]}",
			"ulimits.noderesource.dev/container.app":    "- {type: nofile, soft: 4096, hard: 8192}",
		},
		Linux: &nriv1beta1.LinuxPodSandbox{CgroupParent: "/kubepods/demo"},
	}
}

func demoContainer(pod *nriv1beta1.PodSandbox, id, name string) *nriv1beta1.Container {
	return &nriv1beta1.Container{
		Id: id, PodSandboxId: pod.GetId(), Name: name,
		State: nriv1beta1.ContainerState_CONTAINER_STATE_CREATED,
		Args:  []string{"/usr/sbin/nginx", "-g", "daemon off;"},
		Env:   []string{"PATH=/usr/bin:/bin"},
		Linux: &nriv1beta1.LinuxContainer{Resources: &nriv1beta1.LinuxResources{
			Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(256 << 20)},
			Cpu:    &nriv1beta1.LinuxCPU{Shares: wrapperspb.UInt64(512)},
		}},
	}
}

// lifecycle drives a pod with two containers: "app" gets devices, mounts
// and limits; "sidecar" asks for a mount the validator rejects.
func (d *driver) lifecycle(ctx context.Context) error {
	pod := demoPod()
	app := demoContainer(pod, "ctr-app", "app")
	sidecar := demoContainer(pod, "ctr-sidecar", "sidecar")
	fmt.Fprintf(d.out, "pod %s/%s, annotations:\n", pod.Namespace, pod.Name)
	keys := make([]string, 0, len(pod.Annotations))
	for k := range pod.Annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(d.out, "  %s: %s\n", k, pod.Annotations[k])
	}
	fmt.Fprintln(d.out)

	steps := []struct {
		expectErr bool
		call      func(context.Context) (any, error)
	}{
		{false, func(c context.Context) (any, error) {
			return d.rt.RunPodSandbox(c, &nriv1beta1.AdaptationServiceRunPodSandboxRequest{Pod: pod})
		}},
		{false, func(c context.Context) (any, error) {
			return d.rt.CreateContainer(c, &nriv1beta1.AdaptationServiceCreateContainerRequest{Pod: pod, Container: app})
		}},
		{false, func(c context.Context) (any, error) {
			return d.rt.StartContainer(c, &nriv1beta1.AdaptationServiceStartContainerRequest{Pod: pod, Container: app})
		}},
		{true, func(c context.Context) (any, error) {
			return d.rt.CreateContainer(c, &nriv1beta1.AdaptationServiceCreateContainerRequest{Pod: pod, Container: sidecar})
		}},
		{false, func(c context.Context) (any, error) {
			return d.rt.StopContainer(c, &nriv1beta1.AdaptationServiceStopContainerRequest{Pod: pod, Container: app})
		}},
		{false, func(c context.Context) (any, error) {
			return d.rt.RemoveContainer(c, &nriv1beta1.AdaptationServiceRemoveContainerRequest{Pod: pod, Container: app})
		}},
		{false, func(c context.Context) (any, error) {
			return d.rt.StopPodSandbox(c, &nriv1beta1.AdaptationServiceStopPodSandboxRequest{Pod: pod})
		}},
		{false, func(c context.Context) (any, error) {
			return d.rt.RemovePodSandbox(c, &nriv1beta1.AdaptationServiceRemovePodSandboxRequest{Pod: pod})
		}},
	}
	for _, s := range steps {
		c, cancel := context.WithTimeout(ctx, wait)
		rsp, err := s.call(c)
		cancel()
		if err != nil && !s.expectErr {
			return err
		}
		if err == nil && s.expectErr {
			return errors.New("the validator accepted a container it should have rejected")
		}
		select {
		case rec := <-d.records:
			d.print(rec)
		case <-time.After(wait):
			return errors.New("no dispatch record arrived")
		}
		if cr, ok := rsp.(*nriv1beta1.AdaptationServiceCreateContainerResponse); ok && err == nil {
			d.printAdjustment(cr.GetAdjust())
		}
		if err != nil {
			fmt.Fprintf(d.out, "  => the runtime gets: %s: %s\n", status.Code(err), status.Convert(err).Message())
		}
	}
	return nil
}

// print renders one dispatch record: the event, its outcome, and each
// plugin called with what it changed.
func (d *driver) print(rec *nriv1beta1.DispatchRecord) {
	what := rec.GetPodName()
	if rec.GetContainerName() != "" {
		what += "/" + rec.GetContainerName()
	}
	outcome := strings.ToLower(strings.TrimPrefix(rec.GetOutcome().String(), "DISPATCH_OUTCOME_"))
	line := fmt.Sprintf("%-17s %-16s %s", nri.EventName(rec.GetEvent()), what, outcome)
	if len(rec.GetCalls()) == 0 {
		line += " (no plugin subscribed)"
	}
	fmt.Fprintln(d.out, line)
	for _, c := range rec.GetCalls() {
		full := c.GetPlugin().GetIndex() + "-" + c.GetPlugin().GetName()
		res := strings.ToLower(strings.TrimPrefix(c.GetOutcome().String(), "CALL_OUTCOME_"))
		if c.GetOutcome() == nriv1beta1.CallOutcome_CALL_OUTCOME_VETO &&
			rec.GetOutcome() == nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REJECTED {
			res = "rejected"
		}
		if c.GetError() != "" {
			res += ": " + c.GetError()
		}
		if len(c.GetChanges()) == 0 {
			switch {
			case res == "ok" && isValidator(full):
				res = "accepted"
			case res == "ok":
				res = "ok, no change"
			}
			fmt.Fprintf(d.out, "  %-19s %s\n", full, res)
			continue
		}
		for i, ch := range c.GetChanges() {
			name := full
			if i > 0 {
				name = ""
			}
			op := "+"
			if ch.GetRemoved() {
				op = "-"
			}
			field := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(ch.GetField().String(), "FIELD_"), "_", "-"))
			line := fmt.Sprintf("%s %s %s", op, field, ch.GetKey())
			if ch.GetValue() != "" {
				line += " = " + ch.GetValue()
			}
			fmt.Fprintf(d.out, "  %-19s %s\n", name, strings.TrimSpace(line))
		}
	}
}

// isValidator reports whether full names one of the validating examples.
func isValidator(full string) bool {
	return slices.ContainsFunc(examples, func(e example) bool { return e.validator && e.idx+"-"+e.name == full })
}

// printAdjustment summarizes the merged adjustment the runtime gets.
func (d *driver) printAdjustment(a *nriv1beta1.ContainerAdjustment) {
	var parts []string
	for _, dev := range a.GetLinux().GetDevices() {
		parts = append(parts, "device "+dev.GetPath())
	}
	for _, m := range a.GetMounts() {
		parts = append(parts, "mount "+m.GetSource()+" -> "+m.GetDestination())
	}
	for _, c := range a.GetCdiDevices() {
		parts = append(parts, "CDI "+c.GetName())
	}
	for _, r := range a.GetRlimits() {
		parts = append(parts, fmt.Sprintf("%s %d/%d", r.GetType(), r.GetSoft(), r.GetHard()))
	}
	if len(parts) == 0 {
		parts = []string{"nothing"}
	}
	fmt.Fprintf(d.out, "  => the runtime gets the merged adjustment: %s\n", strings.Join(parts, ", "))
}
