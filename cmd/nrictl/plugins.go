package main

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/selector"
)

func runPlugins(ctx context.Context, g *globals, args []string) error {
	fs := g.flags("plugins", "plugins [-wide]")
	wide := fs.Bool("wide", false, "also show instance id, identity, endpoint and versions")
	if err := parse(fs, g, args); err != nil {
		return err
	}
	c, err := g.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	cctx, cancel := g.callContext(ctx)
	defer cancel()
	rsp, err := c.admin().ListPlugins(cctx, &nriv1beta1.ListPluginsRequest{})
	if err != nil {
		return err
	}
	if g.json() {
		return printJSON(g.stdout, rsp)
	}
	if len(rsp.GetPlugins()) == 0 {
		fmt.Fprintln(g.stdout, "no plugins registered")
		return nil
	}
	tw := newTable(g.stdout)
	head := "PLUGIN\tKIND\tSTATE\tEVENTS\tPOLICY\tCALLS\tVETOES\tTIMEOUTS\tUNAVAIL\tREFUSED\tERRORS\tFILTERED\tSELECTORS\tLAST ERROR" + statusHead
	if *wide {
		head += "\tINSTANCE\tIDENTITY\tENDPOINT\tNRI VERSION\tPLUGIN VERSION\tREGISTERED" + statusWideHead
	}
	fmt.Fprintln(tw, head)
	for _, p := range rsp.GetPlugins() {
		cn := p.GetCounters()
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s", plugin(p.GetPlugin()),
			kebab(p.GetKind().String(), "PLUGIN_KIND_"), kebab(p.GetState().String(), "PLUGIN_STATE_"),
			events(p.GetEvents()), policy(p.GetFailurePolicy()),
			cn.GetCalls(), cn.GetVetoes(), cn.GetTimeouts(), cn.GetUnavailable(), cn.GetRefused(), cn.GetErrors(),
			cn.GetFiltered(), selectors(p.GetSelectors(), *wide), orDash(oneLine(p.GetLastError(), 60))) + statusCell(p)
		if *wide {
			line += fmt.Sprintf("\t%s\t%s\t%s\t%s\t%s\t%s", p.GetInstanceId(), orDash(p.GetIdentity()), orDash(p.GetEndpoint()),
				orDash(p.GetNriVersion()), orDash(p.GetPluginVersion()), p.GetRegisteredAt().AsTime().Local().Format(time.DateTime)) +
				statusWideCells(p)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// selectors renders a plugin's event selectors for a table cell
// (selector.String, on one line): "all" without selectors; cut to 40
// characters unless wide.
func selectors(sels []*nriv1beta1.EventSelector, wide bool) string {
	if len(sels) == 0 {
		return "all"
	}
	n := 40
	if wide {
		n = 4096
	}
	// Selectors are the plugin's text: no control characters reach the
	// terminal.
	return oneLine(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, selector.String(sels)), n)
}

// events summarizes a subscription for a table cell.
func events(evs []nriv1beta1.Event) string {
	switch n := len(evs); {
	case n == int(nriv1beta1.Event_EVENT_LAST)-1:
		return "all"
	case n == 0:
		return "-"
	case n <= 2:
		var names []string
		for _, e := range evs {
			names = append(names, eventName(e))
		}
		return strings.Join(names, ",")
	default:
		return fmt.Sprintf("%d events", n)
	}
}

func policy(p *nriv1beta1.FailurePolicy) string {
	s := "ignore"
	if p.GetFailRequest() {
		s = "fail"
	}
	if p.GetKeepConnected() {
		s += ",keep"
	}
	return s
}

// oneLine makes an error message fit a table cell; a Go gRPC error text
// ("rpc error: code = Internal desc = boom") becomes "Internal: boom".
func oneLine(s string, n int) string {
	if rest, ok := strings.CutPrefix(s, "rpc error: code = "); ok {
		if code, desc, ok := strings.Cut(rest, " desc = "); ok {
			s = code + ": " + desc
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

func runDeprecations(ctx context.Context, g *globals, args []string) error {
	fs := g.flags("deprecations", "deprecations")
	if err := parse(fs, g, args); err != nil {
		return err
	}
	c, err := g.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	cctx, cancel := g.callContext(ctx)
	defer cancel()
	rsp, err := c.admin().ListDeprecations(cctx, &nriv1beta1.ListDeprecationsRequest{})
	if err != nil {
		return err
	}
	if g.json() {
		return printJSON(g.stdout, rsp)
	}
	if len(rsp.GetDeprecations()) == 0 {
		fmt.Fprintln(g.stdout, "no deprecations seen")
		return nil
	}
	tw := newTable(g.stdout)
	fmt.Fprintln(tw, "PLUGIN\tKIND\tEVENT\tCOUNT\tFIRST SEEN\tDETAILS")
	for _, d := range rsp.GetDeprecations() {
		ev := "-"
		if d.GetEvent() != nriv1beta1.Event_EVENT_UNSPECIFIED {
			ev = eventName(d.GetEvent())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", plugin(d.GetPlugin()), d.GetKind(), ev, d.GetCount(),
			d.GetFirstSeen().AsTime().Local().Format(time.DateTime), d.GetDetails())
	}
	return tw.Flush()
}
