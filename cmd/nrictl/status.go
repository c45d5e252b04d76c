package main

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Columns of `nrictl plugins` about plugin status: STATUS always; the
// reason, since when, the NOT_READY policy and the counters with -wide.
const (
	statusHead     = "\tSTATUS"
	statusWideHead = "\tSTATUS REASON\tSTATUS SINCE\tNOT READY\tNR SKIPS\tRESYNCS"
)

// statusCell is the STATUS cell: ready, not-ready or degraded.
func statusCell(p *nriv1beta1.PluginInfo) string {
	st := p.GetStatus()
	if st == nriv1beta1.PluginStatus_PLUGIN_STATUS_UNSPECIFIED {
		st = nriv1beta1.PluginStatus_PLUGIN_STATUS_READY
	}
	return "\t" + kebab(st.String(), "PLUGIN_STATUS_")
}

// statusWideCells are the -wide cells about status. The reason is the
// plugin's own text: control characters are shown as '?', so that it
// cannot drive the operator's terminal.
func statusWideCells(p *nriv1beta1.PluginInfo) string {
	since := "-"
	if ts := p.GetStatusSince(); ts != nil {
		since = ts.AsTime().Local().Format(time.DateTime)
	}
	pol := "-"
	if np := p.GetNotReadyPolicy(); np != nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_UNSPECIFIED {
		pol = kebab(np.String(), "NOT_READY_POLICY_")
	}
	return fmt.Sprintf("\t%s\t%s\t%s\t%d\t%d", orDash(oneLine(printable(p.GetStatusReason()), 60)), since, pol,
		p.GetCounters().GetNotReadySkips(), p.GetCounters().GetRequestedResyncs())
}

// printable replaces control characters (other than spaces, which oneLine
// folds) with '?'.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return '?'
		}
		return r
	}, s)
}
