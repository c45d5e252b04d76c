package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

func runWatch(ctx context.Context, g *globals, args []string) error {
	fs := g.flags("watch", "watch [-event E]... [-plugin P] [-pod ID] [-count N]")
	var evs listFlag
	fs.Var(&evs, "event", "only this event, e.g. CreateContainer (repeatable or comma-separated)")
	plug := fs.String("plugin", "", "only events that called this plugin (NN-name or name)")
	pod := fs.String("pod", "", "only events of this pod (full id)")
	count := fs.Int("count", 0, "stop after this many records (0: until interrupted)")
	if err := parse(fs, g, args); err != nil {
		return err
	}
	req := &nriv1beta1.WatchEventsRequest{Plugin: *plug, PodId: *pod}
	for _, list := range evs {
		for _, s := range strings.Split(list, ",") {
			e, err := parseEvent(strings.TrimSpace(s))
			if err != nil {
				return usagef("-event: %v", err)
			}
			req.Events = append(req.Events, e)
		}
	}
	c, err := g.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	// No -timeout here: a watch lasts until interrupted or -count is reached.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.admin().WatchEvents(wctx, req)
	if err != nil {
		return err
	}
	if _, err := stream.Header(); err != nil {
		return err
	}
	fmt.Fprintln(g.stderr, "watching dispatch records (interrupt to stop)")
	for n := 0; *count <= 0 || n < *count; n++ {
		rsp, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if g.json() {
			err = printJSONLine(g.stdout, rsp.GetRecord())
		} else {
			err = printRecord(g.stdout, rsp.GetRecord())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// printRecord writes a dispatch record as a line for the event and an
// indented line per plugin call.
func printRecord(w io.Writer, r *nriv1beta1.DispatchRecord) error {
	target := r.GetPodName()
	if r.GetContainerName() != "" {
		target += " " + r.GetContainerName()
	}
	start := "-"
	if r.GetStartTime() != nil {
		start = r.GetStartTime().AsTime().Local().Format("15:04:05.000")
	}
	dry := ""
	if r.GetDryRun() {
		dry = " (dry run)"
	}
	fmt.Fprintf(w, "%s #%d %s%s %s  %s  %s\n", start, r.GetSequence(), eventName(r.GetEvent()), dry, target,
		dispatchOutcome(r.GetOutcome()), dur(r.GetDuration(), r.GetDuration() != nil))
	if r.GetError() != "" {
		fmt.Fprintf(w, "    error: %s\n", r.GetError())
	}
	return printCalls(w, r.GetCalls(), "    ")
}

// validators marks the calls of a CreateContainer record that validate:
// they come after every plugin's CreateContainer call, so they name a
// plugin a second time.
func validators(calls []*nriv1beta1.PluginCall) map[int]bool {
	out := map[int]bool{}
	seen := map[string]bool{}
	for i, c := range calls {
		if seen[plugin(c.GetPlugin())] {
			out[i] = true
		}
		seen[plugin(c.GetPlugin())] = true
	}
	for i := range calls {
		// Once one call validates, every later one does.
		if out[i] {
			for j := i; j < len(calls); j++ {
				out[j] = true
			}
			break
		}
	}
	return out
}

func printCalls(w io.Writer, calls []*nriv1beta1.PluginCall, indent string) error {
	width := 0
	for _, c := range calls {
		width = max(width, len(plugin(c.GetPlugin())))
	}
	validating := validators(calls)
	for i, c := range calls {
		out := callOutcome(c.GetOutcome())
		if c.GetFailedOpen() {
			out += " (failed open)"
		}
		if validating[i] {
			out += " (validate)"
		}
		line := fmt.Sprintf("%s%-*s  %-16s %8s", indent, width, plugin(c.GetPlugin()), out, durShort(c))
		if ch := changes(c.GetChanges()); ch != "" {
			line += "  " + ch
		}
		if c.GetError() != "" {
			line += "  error: " + c.GetError()
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " ")); err != nil {
			return err
		}
	}
	return nil
}

func durShort(c *nriv1beta1.PluginCall) string {
	if c.GetDuration() == nil {
		return ""
	}
	return c.GetDuration().AsDuration().Round(time.Microsecond).String()
}
