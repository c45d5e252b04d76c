package conformance_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// The conformance scenarios on the classic paths (bridge_setup_test.go).
//
// Besides the skips below, the classic setups skip by themselves a
// scenario whose plugin declares capabilities or timeouts (classic plugins
// cannot), and on the direct path one whose options classic NRI cannot take
// per runtime (timeouts are process-global, no operator policy). Errors
// reach these paths as classic NRI reports them where nri-grpc is not the
// one deciding (conformance.PlainErrors): every error on the direct path,
// registration refusals behind the bridge.

// path is which classic path a skip applies to.
type path int

const (
	onDirect path = 1 << iota
	onBridged
	onDropIn
	onBoth = onDirect | onBridged
)

// classicSkip skips scenarios on a classic path, with the reason: the
// scenarios named ("Group/Name"), those whose name starts with prefix, or
// every deliberate change.
type classicSkip struct {
	on         path
	names      []string
	prefix     string
	deliberate bool
	reason     string
}

func (sk classicSkip) match(s conformance.ScenarioInfo) bool {
	full := s.Group + "/" + s.Name
	return (sk.deliberate && s.Origin == conformance.Deliberate) || slices.Contains(sk.names, full) ||
		(sk.prefix != "" && strings.HasPrefix(full, sk.prefix))
}

func named(names ...string) []string { return names }

const (
	dc = "DeliberateChanges/"
	// Reasons shared by several scenarios.
	noInstanceIDs = "instance ids and instance handover are nri-grpc's: classic plugins never see an instance id " +
		"(classic NRI keeps both connections of a re-registered name; behind the bridge the handover is invisible to them)"
	noEvictions = "the plugin answers evictions, which the classic stub API (pkg/stub) cannot carry; " +
		"classic runtimes drop them anyway (docs/bridge.md)"
	classicShutdown = "Shutdown kinds and reasons are nri-grpc's: classic NRI sends no Shutdown on its own stop or a refused " +
		"registration, and the bridge forwards the classic, reason-less Shutdown (docs/bridge.md); asserted in TestClassicComparison"
	nilTail = "the classic runtime builds the UpdateContainer reply itself: a nil tail update when no plugin changed the target " +
		"(reference §4.5); DESIGN §5.5's always-set final resources hold only where the runtime speaks gRPC"
	limitation = "documented limitation of the classic path (DESIGN §5a, docs/bridge.md): "
	dropInAPI  = "the drop-in has upstream pkg/adaptation's API (docs/embedding.md): "
	compared   = "; asserted in TestClassicComparison"
)

var classicSkips = []classicSkip{
	// Plugin status and RequestResync are nri-grpc RuntimeService calls.
	{on: onBoth | onDropIn, prefix: conformance.StatusGroup + "/", reason: "plugin status and RequestResync are RuntimeService calls of nri-grpc: " +
		"classic plugins (pkg/stub) cannot make them; the scenarios run behind the bridge with gRPC plugins in TestGRPCBridged"},

	// Classic NRI itself does not have nri-grpc's deliberate changes.
	{on: onDirect, deliberate: true, reason: "a deliberate change of nri-grpc from classic NRI (DESIGN §5): classic NRI keeps its own behaviour; " +
		"the differences that survive the bridge are asserted in TestClassicComparison"},

	// Event selectors are nri-grpc's; behind the bridge the operator gives
	// classic plugins theirs (bridge.WithClassicSelectors).
	{on: onDirect, prefix: "Selectors/", reason: "classic NRI has no event selectors"},

	// Scenarios mirrored from classic NRI's suite that assert an nri-grpc
	// detail on top.
	{on: onBoth | onDropIn, names: named("PluginConnection/should configure the plugin"), reason: noInstanceIDs},
	{on: onDirect, names: named("NRIVersionExchange/should pass runtime version information to plugins"),
		reason: "asserts nri-grpc's advertised protocol (v1beta1) in Configure; classic NRI advertises its build's version"},
	{on: onDirect | onDropIn, names: named("PluginMetrics/TestPluginSynchronizeMetrics"), reason: "classic NRI's Metrics interface (the runtime's, which the drop-in feeds) counts no synchronized objects"},
	{on: onBoth | onDropIn, names: named("PluginMetrics/TestPluginCreateContainerMetrics", "PluginMetrics/TestPluginUpdateContainerMetrics"), reason: noEvictions},

	// Gaps whose contract point is nri-grpc's.
	{on: onBoth | onDropIn, names: named("Gaps/every call carries the instance id of the registration",
		"UnsolicitedContainerUpdateRequests/a replaced instance's unsolicited updates are refused"), reason: noInstanceIDs},
	{on: onBoth, names: named("Gaps/registration refusals name the rule"),
		reason: "nri-grpc's registration rules (capabilities, timeouts, raw event bits, index syntax, empty names): a classic plugin " +
			"cannot express most of them (pkg/stub fills in an empty name, refuses unknown event bits itself)"},
	{on: onBoth | onDropIn, names: named("Gaps/a registration refused after the plugin was dialed sends Shutdown REGISTRATION_FAILED"), reason: classicShutdown},
	{on: onBoth | onDropIn, names: named("Gaps/updates and evictions in the reply to the last Synchronize page reach the runtime"), reason: noEvictions},
	{on: onBoth, names: named("SolicitedContainerUpdatesByPlugins/updates of other containers come with the target's final resources"), reason: nilTail},
	{on: onDirect, names: named("Gaps/StopContainer: a conflicting update is dropped and recorded as that plugin's error; the stop goes on"),
		reason: "classic NRI fails StopContainer on a conflicting update (nri-grpc drops it and reports a plugin error)"},
	{on: onBridged, names: named("Gaps/StopContainer: a conflicting update is dropped and recorded as that plugin's error; the stop goes on"),
		reason: limitation + "a classic runtime has no plugin errors: the stop goes on with the first update, the error is only logged" + compared},
	{on: onDirect, names: named("Validation/validators see the pristine container, the merged adjustment, the owners and every registered plugin"),
		reason: "classic NRI hands validators its unstripped merge skeleton (empty hooks and resources messages) as the adjustment"},
	{on: onDirect, names: named("ContainerCreationAdjustments/there are multiple plugins: linux sysctl (remove-then-add override)"),
		reason: "classic NRI's reply keeps both -k and k (DESIGN §5.5 changes it)"},
	{on: onDirect, names: named("ContainerCreationAdjustments/there are multiple plugins: namespace (remove-then-add override)"),
		reason: "classic NRI's namespace removal is a claim: the override conflicts (DESIGN §5.5, docs/PROTOCOL.md §9)"},

	// nri-grpc's deliberate changes that a classic runtime undoes (DESIGN
	// §5a) or classic plugins cannot see.
	{on: onBridged, prefix: dc + "DESIGN 5.2: an error on ", reason: limitation + "notifications never fail behind the bridge and plugin errors are only logged (a classic runtime has no plugin errors)" + compared},
	{on: onBridged, names: named(dc+"DESIGN 5.1: UNIMPLEMENTED is a protocol error, not a veto: the plugin is skipped and evicted",
		dc+"DESIGN 5.6: Shutdown on server stop, with its reason, before the registration ends"), reason: classicShutdown},
	{on: onBridged, names: named(dc+"DESIGN 5.6: instance handover: the new instance takes over and the old one gets Shutdown REPLACED",
		dc+"DESIGN 5.6: instance handover: events during the new instance's synchronization go to exactly one instance"), reason: noInstanceIDs},
	{on: onBridged, names: named(dc+"DESIGN 5.5: evictions from CreateContainer are passed on, one per container",
		dc+"DESIGN 5.5: evictions from UpdateContainer and StopContainer are passed on",
		dc+"DESIGN 5.5: evictions from UpdateContainers reach the runtime"), reason: noEvictions},
	{on: onBridged, names: named(dc + "DESIGN 5.5: pid limits in updates are passed on"),
		reason: limitation + "classic runtimes ignore pid limits in updates" + compared},
	{on: onBridged, names: named(dc+"DESIGN 5.5: env and device removal markers reach the runtime",
		dc+"DESIGN 5.5: a removal of an env variable an earlier plugin set leaves only the marker, never both k and -k",
		dc+"DESIGN 5.5: a removal of a device an earlier plugin set leaves only the marker, never both k and -k"),
		reason: limitation + "env and device removal markers are dropped by the classic runtime's merge" + compared},
	{on: onBridged, names: named(dc + "DESIGN 5.5: UpdateContainer returns the target's final resources even when no plugin changed them (no nil tail update)"), reason: nilTail},
	{on: onBridged, names: named("UnsolicitedContainerUpdateRequests/there are plugins: should be delivered, without crash/panic"),
		reason: limitation + "unsolicited updates reach the classic runtime asynchronously, from the bridge (00-nri-grpc)" + compared},
	{on: onBridged, names: named("UnsolicitedContainerUpdateRequests/PROTOCOL 13: failures come back in the failed lists with an OK status (classic lost them in an error)"),
		reason: limitation + "unsolicited updates are relayed asynchronously: the classic runtime's failed list is not reported back"},

	// The drop-in has upstream's API, so what that API cannot carry holds
	// for it as for a classic runtime behind the bridge.
	{on: onDropIn, names: named("SolicitedContainerUpdatesByPlugins/updates of other containers come with the target's final resources",
		dc+"DESIGN 5.5: UpdateContainer returns the target's final resources even when no plugin changed them (no nil tail update)"),
		reason: dropInAPI + "UpdateContainer's answer ends with the target's update, nil when no plugin changed it, as upstream's (containerd reads the last entry as the target's)"},
	{on: onDropIn, names: named("Gaps/StopContainer: a conflicting update is dropped and recorded as that plugin's error; the stop goes on"),
		reason: dropInAPI + "StopContainer returns no plugin errors: the stop goes on with the first update, the conflict is logged"},
	{on: onDropIn, prefix: dc + "DESIGN 5.2: an error on ", reason: dropInAPI + "notifications return only an error: they never fail, and plugin errors are logged"},
	{on: onDropIn, names: named(dc+"DESIGN 5.1: UNIMPLEMENTED is a protocol error, not a veto: the plugin is skipped and evicted",
		dc+"DESIGN 5.6: Shutdown on server stop, with its reason, before the registration ends"), reason: classicShutdown},
	{on: onDropIn, names: named(dc+"DESIGN 5.6: instance handover: the new instance takes over and the old one gets Shutdown REPLACED",
		dc+"DESIGN 5.6: instance handover: events during the new instance's synchronization go to exactly one instance"), reason: noInstanceIDs},
	{on: onDropIn, names: named(dc+"DESIGN 5.5: evictions from CreateContainer are passed on, one per container",
		dc+"DESIGN 5.5: evictions from UpdateContainer and StopContainer are passed on",
		dc+"DESIGN 5.5: evictions from UpdateContainers reach the runtime"), reason: noEvictions},
	{on: onDropIn, names: named("UnsolicitedContainerUpdateRequests/PROTOCOL 13: failures come back in the failed lists with an OK status (classic lost them in an error)"),
		reason: noEvictions},
}

// skipsFor returns the Run option skipping what does not apply to p.
func skipsFor(p path) conformance.RunOption {
	return conformance.SkipScenarios(func(s conformance.ScenarioInfo) string {
		name := map[path]string{onDirect: "classic-direct", onBridged: "classic-bridged", onDropIn: "classic-dropin"}[p]
		for _, sk := range classicSkips {
			if sk.on&p != 0 && sk.match(s) {
				return name + ": " + sk.reason
			}
		}
		return ""
	})
}

// TestClassicDirect runs the scenarios on classic NRI itself: upstream
// pkg/adaptation driving upstream pkg/stub plugins.
func TestClassicDirect(t *testing.T) { conformance.Run(t, classicDirect, skipsFor(onDirect)) }

// TestClassicBridged runs the scenarios with nri-grpc between the classic
// runtime and the same classic plugins: runtime side, server, plugin side.
func TestClassicBridged(t *testing.T) { conformance.Run(t, classicBridged, skipsFor(onBridged)) }

// TestClassicDropIn runs the scenarios on nri-grpc's drop-in for
// pkg/adaptation, driven as upstream is on the direct path, with the same
// classic plugins on its classic socket.
func TestClassicDropIn(t *testing.T) { conformance.Run(t, classicDropIn, skipsFor(onDropIn)) }

// TestClassicSkipsExist fails when a skip names a scenario that does not
// exist (a renamed scenario would otherwise silently run again).
func TestClassicSkipsExist(t *testing.T) {
	exists := map[string]bool{}
	for _, s := range conformance.Scenarios() {
		exists[s.Group+"/"+s.Name] = true
	}
	for _, sk := range classicSkips {
		for _, n := range sk.names {
			if !exists[n] {
				t.Errorf("classic skip of a scenario that does not exist: %q", n)
			}
		}
		if sk.prefix != "" && !slices.ContainsFunc(conformance.Scenarios(), sk.match) {
			t.Errorf("classic skip prefix %q matches no scenario", sk.prefix)
		}
	}
}
