package policy

import (
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nri-grpc/nri-grpc/auth"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
)

// Rule is one [[policy]] entry of nrid's configuration: an identity, the
// plugins it may register, and what those plugins and the identity may do.
// The zero value grants nothing.
type Rule struct {
	// Identity selects callers: "uid:N", "gid:N" (any uid whose user is a
	// member of group N in the user database), "user:NAME", "group:NAME",
	// "cert:CN", "token:NAME", "launch:NN-name", "<kind>:*" (every identity
	// of that kind) or "*" (every authenticated caller).
	Identity string `toml:"identity"`
	// Plugins the identity may register: "name" (any index), "NN-name", or
	// "*" (any plugin). Empty: none.
	Plugins []string `toml:"plugins"`
	// Indices restricts the indices: "NN" or "NN-MM" (inclusive). Empty: any.
	Indices []string `toml:"indices"`
	// Events the plugins may subscribe to: "all" or event names
	// ("create_container", "CreateContainer"). Empty: none.
	Events []string `toml:"events"`

	// Adjust grants the ordinary adjustments: env, annotations, resources,
	// rlimits, namespaced sysctls (net.*, the IPC and UTS sets), OOM score,
	// I/O priority, scheduler, RDT, memory policy.
	Adjust bool `toml:"adjust"`
	// HostSysctls grants sysctls the kernel does not namespace
	// (kernel.core_pattern, vm.*, ...): they change the host
	// (root-equivalent).
	HostSysctls bool `toml:"host_sysctls"`
	// CgroupsPath grants adjust.linux.cgroups_path: moving the container to
	// another cgroup, out from under the limits the runtime placed it in.
	CgroupsPath bool `toml:"cgroups_path"`
	// Args grants adjust.args: replacing or extending the command the
	// container runs.
	Args bool `toml:"args"`
	// OCIHooks grants adjust.hooks (root-equivalent).
	OCIHooks bool `toml:"oci_hooks"`
	// Mounts grants adjust.mounts (root-equivalent).
	Mounts bool `toml:"mounts"`
	// Devices grants adjust.linux.devices, adjust.cdi_devices and
	// adjust.linux.net_devices (root-equivalent).
	Devices bool `toml:"devices"`
	// Namespaces grants adjust.linux.namespaces (root-equivalent).
	Namespaces bool `toml:"namespaces"`
	// Seccomp grants adjust.linux.seccomp_policy (root-equivalent).
	Seccomp bool `toml:"seccomp"`
	// UpdateOthers grants the update lists of responses and UpdateContainers:
	// resources of containers other than the one being created.
	UpdateOthers bool `toml:"update_others"`
	// EvictOthers grants the evict lists: evicting containers.
	EvictOthers bool `toml:"evict_others"`
	// MayFail lets the plugins ask for the failure policy "fail"; without it
	// their request is downgraded to "ignore" (the operator's [[plugin]]
	// required = true still applies).
	MayFail bool `toml:"may_fail"`
	// MaxTimeout caps the plugins' timeouts ("5s"); empty: no cap beyond the
	// server's.
	MaxTimeout string `toml:"max_timeout"`
	// Endpoints are the endpoint forms the plugins may use: "unix" (a socket
	// in the plugin socket directory) and "tcp" (which needs TCPHosts).
	// Empty: ["unix"].
	Endpoints []string `toml:"endpoints"`
	// TCPHosts are the hosts the plugins' TCP endpoints may name: IP
	// addresses, CIDRs ("10.0.0.0/8", "fd00::/8") and host names (matched
	// literally, without regard to case; a name is never resolved to be
	// matched against the addresses). Required with "tcp" in Endpoints, and
	// only allowed with it.
	TCPHosts []string `toml:"tcp_hosts"`

	// Admin grants AdminService.
	Admin bool `toml:"admin"`
	// Runtime grants AdaptationService (acting as the runtime).
	Runtime bool `toml:"runtime"`
}

// PluginRule is one [[plugin]] entry: the operator's policy for one plugin,
// whoever registers it.
type PluginRule struct {
	// Name is "NN-name" (one plugin) or "name" (that name at any index;
	// an "NN-name" entry wins over a "name" entry).
	Name string `toml:"name"`
	// Required forces the failure policy: true is "fail" (the plugin's
	// absence and failures fail creating events; the plugin also joins the
	// required plugins), false is "ignore". Unset: the plugin's own choice,
	// within its grants.
	Required *bool `toml:"required"`
	// KeepConnected overrides the plugin's keep_connected: stay registered
	// after a timeout.
	KeepConnected *bool `toml:"keep_connected"`
	// MaxTimeout caps the plugin's timeouts ("2s"); empty: no cap.
	MaxTimeout string `toml:"max_timeout"`
	// NotReady is what the plugin's NOT_READY status means for its events:
	// "wait" (within its time for the event, then its failure policy),
	// "fail" (unavailable at once, its failure policy) or "skip" (not
	// called, the event goes on). Empty: server.not_ready.
	NotReady string `toml:"not_ready"`
	// Selectors are the plugin's event selectors when it registers
	// without its own (classic plugins behind the bridge always do), and
	// what it selects while it is absent (an "NN-name" entry only): a
	// required plugin is required only for that.
	Selectors []SelectorRule `toml:"selectors"`
	// WaitOnRestart decides whether a restarted nrid's restart gate, and
	// the hold on events after a takeover, wait for the plugin when it was
	// registered before. Unset: nrid's choice — every plugin but a classic
	// one that connected to bridge.plugin_socket by itself (pkg/stub does
	// not reconnect), unless that one is required, and but a required
	// plugin an earlier gate went on without (docs/operations.md,
	// "Restarts and upgrades").
	WaitOnRestart *bool `toml:"wait_on_restart"`
}

// SelectorRule is one event selector of a [[plugin]] entry
// (nri.v1beta1.EventSelector; docs/PROTOCOL.md, "Event selectors").
type SelectorRule struct {
	// Namespaces are the pod namespaces selected (EventSelector.namespaces).
	Namespaces []string `toml:"namespaces"`
	// PodLabels is a Kubernetes label selector over the pod's labels
	// (EventSelector.pod_labels).
	PodLabels string `toml:"pod_labels"`
	// ContainerNames are the container names selected
	// (EventSelector.container_names).
	ContainerNames []string `toml:"container_names"`
	// RuntimeHandlers are the pods' runtime handlers selected
	// (EventSelector.runtime_handlers).
	RuntimeHandlers []string `toml:"runtime_handlers"`
}

// Grant is a set of permissions.
type Grant uint32

// The grants. Their names are the TOML keys of a Rule.
const (
	GrantAdjust Grant = 1 << iota
	GrantOCIHooks
	GrantMounts
	GrantDevices
	GrantNamespaces
	GrantSeccomp
	GrantUpdateOthers
	GrantEvictOthers
	GrantMayFail
	GrantUnix
	GrantTCP
	GrantAdmin
	GrantRuntime
	GrantHostSysctls
	GrantCgroupsPath
	GrantArgs

	grantLast
	// GrantAll is every grant: the socket owner's.
	GrantAll = grantLast - 1
	// pluginGrants are scoped to the plugins of a rule; the others
	// (admin, runtime) to the identity.
	pluginGrants = GrantAll &^ (GrantAdmin | GrantRuntime)
)

var grantNames = map[Grant]string{
	GrantAdjust: "adjust", GrantOCIHooks: "oci_hooks", GrantMounts: "mounts", GrantDevices: "devices",
	GrantNamespaces: "namespaces", GrantSeccomp: "seccomp", GrantUpdateOthers: "update_others",
	GrantEvictOthers: "evict_others", GrantMayFail: "may_fail", GrantUnix: "endpoints unix",
	GrantTCP: "endpoints tcp", GrantAdmin: "admin", GrantRuntime: "runtime",
	GrantHostSysctls: "host_sysctls", GrantCgroupsPath: "cgroups_path", GrantArgs: "args",
}

// String names the grants, as in the configuration.
func (g Grant) String() string {
	var out []string
	for b := Grant(1); b < grantLast; b <<= 1 {
		if g&b != 0 {
			out = append(out, grantNames[b])
		}
	}
	return strings.Join(out, "+")
}

// RuleError is an invalid rule: Key is the TOML path of the offending key
// ("policy[2].events").
type RuleError struct {
	// Key is the TOML path of the offending key.
	Key string
	// Err says what is wrong with it.
	Err error
}

// Error implements error: "key: err".
func (e *RuleError) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *RuleError) Unwrap() error { return e.Err }

// identity kinds.
const (
	kindAny    = "*"
	kindUID    = "uid"
	kindGID    = "gid"
	kindCert   = "cert"
	kindToken  = "token"
	kindLaunch = "launch"
)

// matcher selects identities.
type matcher struct {
	kind  string // kindAny, kindUID, ...
	value string // "" for every identity of the kind
	num   uint32 // uid or gid
}

// pluginPattern selects plugins by name and index ("" is any).
type pluginPattern struct{ name, idx string }

type idxRange struct{ lo, hi int }

// rule is a compiled Rule.
type rule struct {
	index      int
	match      matcher
	plugins    []pluginPattern
	indices    []idxRange
	events     uint32
	grants     Grant
	maxTimeout time.Duration
	tcpHosts   tcpHosts
}

// compile checks and compiles r, the index-th [[policy]] entry.
func compile(index int, r Rule) (*rule, error) {
	key := func(k string) string { return fmt.Sprintf("policy[%d].%s", index, k) }
	bad := func(k string, format string, args ...any) error {
		return &RuleError{Key: key(k), Err: fmt.Errorf(format, args...)}
	}
	out := &rule{index: index}
	m, err := parseMatcher(r.Identity)
	if err != nil {
		return nil, &RuleError{Key: key("identity"), Err: err}
	}
	out.match = m
	for i, p := range r.Plugins {
		pp, err := parsePluginPattern(p)
		if err != nil {
			return nil, bad(fmt.Sprintf("plugins[%d]", i), "%v", err)
		}
		out.plugins = append(out.plugins, pp)
	}
	for i, s := range r.Indices {
		ir, err := parseIndexRange(s)
		if err != nil {
			return nil, bad(fmt.Sprintf("indices[%d]", i), "%v", err)
		}
		out.indices = append(out.indices, ir)
	}
	for i, s := range r.Events {
		mask, err := ParseEvent(s)
		if err != nil {
			return nil, bad(fmt.Sprintf("events[%d]", i), "%v", err)
		}
		out.events |= mask
	}
	if r.MaxTimeout != "" {
		d, err := time.ParseDuration(r.MaxTimeout)
		if err != nil || d <= 0 {
			return nil, bad("max_timeout", "%q is not a positive duration (for example \"2s\")", r.MaxTimeout)
		}
		out.maxTimeout = d
	}
	for b, on := range map[Grant]bool{
		GrantAdjust: r.Adjust, GrantOCIHooks: r.OCIHooks, GrantMounts: r.Mounts, GrantDevices: r.Devices,
		GrantNamespaces: r.Namespaces, GrantSeccomp: r.Seccomp, GrantUpdateOthers: r.UpdateOthers,
		GrantEvictOthers: r.EvictOthers, GrantMayFail: r.MayFail, GrantAdmin: r.Admin, GrantRuntime: r.Runtime,
		GrantHostSysctls: r.HostSysctls, GrantCgroupsPath: r.CgroupsPath, GrantArgs: r.Args,
	} {
		if on {
			out.grants |= b
		}
	}
	eps := r.Endpoints
	if len(eps) == 0 {
		eps = []string{"unix"}
	}
	for i, e := range eps {
		switch e {
		case "unix":
			out.grants |= GrantUnix
		case "tcp":
			out.grants |= GrantTCP
		default:
			return nil, bad(fmt.Sprintf("endpoints[%d]", i), "%q is not an endpoint form; use \"unix\" or \"tcp\"", e)
		}
	}
	if err := compileTCPHosts(out, r, key); err != nil {
		return nil, err
	}
	if len(out.indices) > 0 && len(out.plugins) == 0 {
		return nil, bad("indices", "is set but plugins is empty: the rule grants no plugin")
	}
	if err := launchOwnSlot(m, out.plugins, bad); err != nil {
		return nil, err
	}
	return out, nil
}

// launchOwnSlot checks that a rule for one launched plugin
// ("launch:NN-name") names no other plugin slot than its own.
func launchOwnSlot(m matcher, plugins []pluginPattern, bad func(k string, format string, args ...any) error) error {
	if m.kind != kindLaunch || m.value == "" {
		return nil
	}
	for i, p := range plugins {
		if p.name != "" && p.name != m.value[3:] || p.idx != "" && p.idx != m.value[:2] {
			return bad(fmt.Sprintf("plugins[%d]", i), "a launch identity may only register its own slot %s", m.value)
		}
	}
	return nil
}

// parseMatcher parses an identity selector.
func parseMatcher(s string) (matcher, error) {
	if s == "" {
		return matcher{}, fmt.Errorf("must not be empty; use \"uid:N\", \"gid:N\", \"user:NAME\", \"group:NAME\", \"cert:CN\", \"token:NAME\", \"launch:NN-name\" or \"*\"")
	}
	if s == "*" {
		return matcher{kind: kindAny}, nil
	}
	kind, value, ok := strings.Cut(s, ":")
	if !ok || value == "" {
		return matcher{}, fmt.Errorf("%q is not KIND:VALUE (for example \"uid:1000\" or \"cert:node-agent\")", s)
	}
	if value == "*" {
		switch kind {
		case kindUID, kindCert, kindToken, kindLaunch:
			return matcher{kind: kind}, nil
		}
		return matcher{}, fmt.Errorf("%q: the wildcard works with uid, cert, token and launch", s)
	}
	switch kind {
	case kindUID, kindGID:
		n, err := strconv.ParseUint(value, 10, 32)
		if err != nil {
			return matcher{}, fmt.Errorf("%q: %q is not a number", s, value)
		}
		return matcher{kind: kind, value: value, num: uint32(n)}, nil
	case "user":
		u, err := user.Lookup(value)
		if err != nil {
			return matcher{}, fmt.Errorf("%q: %v", s, err)
		}
		n, _ := strconv.ParseUint(u.Uid, 10, 32)
		return matcher{kind: kindUID, value: u.Uid, num: uint32(n)}, nil
	case "group":
		g, err := user.LookupGroup(value)
		if err != nil {
			return matcher{}, fmt.Errorf("%q: %v", s, err)
		}
		n, _ := strconv.ParseUint(g.Gid, 10, 32)
		return matcher{kind: kindGID, value: g.Gid, num: uint32(n)}, nil
	case kindCert:
		return matcher{kind: kind, value: value}, nil
	case kindToken:
		if err := auth.CheckTokenName(value); err != nil {
			return matcher{}, fmt.Errorf("%q: %v", s, err)
		}
		return matcher{kind: kind, value: value}, nil
	case kindLaunch:
		if _, _, err := splitFull(value); err != nil {
			return matcher{}, fmt.Errorf("%q: %v", s, err)
		}
		return matcher{kind: kind, value: value}, nil
	}
	return matcher{}, fmt.Errorf("%q: unknown identity kind %q; use uid, gid, user, group, cert, token or launch", s, kind)
}

// validName applies the plugin name rule of docs/PROTOCOL.md §3.
func validName(name string) error {
	if name == "" {
		return fmt.Errorf("plugin name is empty")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.+-", r)) {
			return fmt.Errorf("plugin name %q contains %q; allowed are [a-zA-Z0-9_.+-]", name, r)
		}
	}
	return nil
}

func isIndex(s string) bool {
	return len(s) == 2 && s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9'
}

// splitFull splits "NN-name".
func splitFull(full string) (idx, name string, err error) {
	idx, name, ok := strings.Cut(full, "-")
	if !ok || !isIndex(idx) {
		return "", "", fmt.Errorf("%q is not NN-name (two digits, a dash, a name)", full)
	}
	if err := validName(name); err != nil {
		return "", "", err
	}
	return idx, name, nil
}

func parsePluginPattern(s string) (pluginPattern, error) {
	if s == "*" {
		return pluginPattern{}, nil
	}
	if idx, name, ok := strings.Cut(s, "-"); ok && isIndex(idx) {
		if err := validName(name); err != nil {
			return pluginPattern{}, err
		}
		return pluginPattern{name: name, idx: idx}, nil
	}
	if err := validName(s); err != nil {
		return pluginPattern{}, err
	}
	return pluginPattern{name: s}, nil
}

func parseIndexRange(s string) (idxRange, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}
	if !isIndex(lo) || !isIndex(hi) {
		return idxRange{}, fmt.Errorf("%q is not an index \"NN\" or a range \"NN-MM\"", s)
	}
	l, _ := strconv.Atoi(lo)
	h, _ := strconv.Atoi(hi)
	if l > h {
		return idxRange{}, fmt.Errorf("%q: the range is empty (%s > %s)", s, lo, hi)
	}
	return idxRange{l, h}, nil
}

// allEvents is nri.AllEvents in the type of the server's Authorizer masks.
const allEvents = uint32(nri.AllEvents)

// ParseEvent returns the subscription mask of an event name: "all",
// "create_container", "CreateContainer" or "EVENT_CREATE_CONTAINER".
func ParseEvent(s string) (uint32, error) {
	norm := func(x string) string { return strings.ToLower(strings.ReplaceAll(x, "_", "")) }
	n := norm(strings.TrimPrefix(strings.TrimPrefix(s, "EVENT_"), "event_"))
	if n == "all" {
		return allEvents, nil
	}
	for e := nriv1beta1.Event_EVENT_RUN_POD_SANDBOX; e < nriv1beta1.Event_EVENT_LAST; e++ {
		if norm(strings.TrimPrefix(e.String(), "EVENT_")) == n {
			return uint32(nri.EventMask(e)), nil
		}
	}
	return 0, fmt.Errorf("%q is not an event; use \"all\" or one of %s", s, strings.Join(EventNames(allEvents), ", "))
}

// EventNames names the events of a mask ("create_container", ...).
func EventNames(mask uint32) []string {
	var out []string
	for _, e := range nri.MaskEvents(int32(mask)) {
		out = append(out, strings.ToLower(strings.TrimPrefix(e.String(), "EVENT_")))
	}
	return out
}

// matchesPlugin reports whether the rule lets its identity register the
// plugin idx-name.
func (r *rule) matchesPlugin(idx, name string) bool {
	ok := slices.ContainsFunc(r.plugins, func(p pluginPattern) bool {
		return (p.name == "" || p.name == name) && (p.idx == "" || p.idx == idx)
	})
	if !ok {
		return false
	}
	if len(r.indices) == 0 {
		return true
	}
	n, err := strconv.Atoi(idx)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(r.indices, func(ir idxRange) bool { return n >= ir.lo && n <= ir.hi })
}
