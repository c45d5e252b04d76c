package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

func runDryRun(ctx context.Context, g *globals, args []string) error {
	fs := g.flags("dry-run", "dry-run [-event create|update] [-pod-file F] [-container-file F] [-resources-file F] [synthetic flags]")
	event := fs.String("event", "create", "create (CreateContainer) or update (UpdateContainer)")
	podFile := fs.String("pod-file", "", "PodSandbox as JSON (protojson; - for stdin) instead of a synthetic pod")
	ctrFile := fs.String("container-file", "", "Container as JSON (protojson; - for stdin) instead of a synthetic container")
	resFile := fs.String("resources-file", "", "for -event update: the requested LinuxResources as JSON (default: the container's)")
	ctrName := fs.String("container-name", "app", "name of the synthetic container")
	var so synthOpts
	so.register(fs, "nrictl-dry-run")
	if err := parse(fs, g, args); err != nil {
		return err
	}
	req := &nriv1beta1.DryRunRequest{}
	switch strings.ToLower(*event) {
	case "create", "createcontainer", "create-container":
		req.Event = nriv1beta1.Event_EVENT_CREATE_CONTAINER
	case "update", "updatecontainer", "update-container":
		req.Event = nriv1beta1.Event_EVENT_UPDATE_CONTAINER
	default:
		return usagef("-event %q: use create or update", *event)
	}
	if *podFile == "-" && *ctrFile == "-" {
		return usagef("-pod-file and -container-file cannot both read standard input")
	}
	if *podFile != "" {
		req.Pod = &nriv1beta1.PodSandbox{}
		if err := readJSON(*podFile, req.Pod); err != nil {
			return err
		}
	}
	if *ctrFile != "" {
		req.Container = &nriv1beta1.Container{}
		if err := readJSON(*ctrFile, req.Container); err != nil {
			return err
		}
	}
	if req.Pod == nil {
		req.Pod = so.pod(so.name)
		if req.Container != nil && req.Container.GetPodSandboxId() != "" {
			req.Pod.Id = req.Container.GetPodSandboxId()
		}
	}
	if req.Container == nil {
		req.Container = so.container(req.Pod, *ctrName)
	}
	if req.Event == nriv1beta1.Event_EVENT_UPDATE_CONTAINER {
		if *resFile != "" {
			req.LinuxResources = &nriv1beta1.LinuxResources{}
			if err := readJSON(*resFile, req.LinuxResources); err != nil {
				return err
			}
		} else {
			req.LinuxResources = req.GetContainer().GetLinux().GetResources().CloneVT()
		}
	} else if *resFile != "" {
		return usagef("-resources-file is for -event update")
	}

	c, err := g.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	cctx, cancel := g.callContext(ctx)
	defer cancel()
	rsp, err := c.admin().DryRun(cctx, req)
	if err != nil {
		return err
	}
	if g.json() {
		err = printJSON(g.stdout, rsp)
	} else {
		err = printDryRun(g.stdout, req, rsp)
	}
	if err != nil {
		return err
	}
	if rsp.GetError() != "" {
		fmt.Fprintln(g.stderr, "nrictl: the event would fail:", rsp.GetError())
		return quietError{1}
	}
	return nil
}

func printDryRun(w io.Writer, req *nriv1beta1.DryRunRequest, rsp *nriv1beta1.DryRunResponse) error {
	result := "ok: the event would succeed"
	if rsp.GetError() != "" {
		result = "failed: " + rsp.GetError()
	}
	fmt.Fprintf(w, "%s of %s/%s %s (dry run)\n", eventName(req.GetEvent()), req.GetPod().GetNamespace(), req.GetPod().GetName(),
		req.GetContainer().GetName())
	fmt.Fprintf(w, "result: %s\n", result)
	if len(rsp.GetRecord().GetCalls()) == 0 {
		fmt.Fprintln(w, "plugins: none subscribed")
	} else {
		fmt.Fprintln(w, "plugins:")
		if err := printCalls(w, rsp.GetRecord().GetCalls(), "  "); err != nil {
			return err
		}
	}
	if len(rsp.GetNotEvaluated()) > 0 {
		var names []string
		for _, p := range rsp.GetNotEvaluated() {
			names = append(names, plugin(p))
		}
		fmt.Fprintf(w, "not evaluated (no dry-run support): %s\n", strings.Join(names, ", "))
	}
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintln(w, title+":")
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
	section("adjustment", flatten(rsp.GetAdjust()))
	var upd, ev []string
	for _, u := range rsp.GetUpdate() {
		upd = append(upd, prefixed(u.GetContainerId()+" ", flatten(u.GetLinux()))...)
	}
	for _, e := range rsp.GetEvict() {
		ev = append(ev, e.GetContainerId()+": "+e.GetReason())
	}
	section("updates of other containers", upd)
	section("evictions", ev)
	if req.GetEvent() == nriv1beta1.Event_EVENT_UPDATE_CONTAINER {
		section("resources changed by plugins", newLines(flatten(req.GetLinuxResources()), flatten(rsp.GetLinuxResources())))
	}
	return nil
}

func prefixed(p string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = p + l
	}
	return out
}

// newLines returns the lines of after that are not in before.
func newLines(before, after []string) []string {
	seen := map[string]bool{}
	for _, l := range before {
		seen[l] = true
	}
	var out []string
	for _, l := range after {
		if !seen[l] {
			out = append(out, l)
		}
	}
	return out
}
