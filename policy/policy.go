// Package policy is nri-grpc's authorization policy (nrid's, and that of
// every embedder of package node): it maps authenticated
// identities to grants (which plugins they may register, which events those
// plugins may receive, which adjustment fields they may change, failure
// policy and timeout caps, endpoint forms, AdminService and
// AdaptationService access), implements server.Authorizer, and answers the
// per-service access checks of the interceptor chain (package interceptor).
//
// # Model
//
// A [Rule] (a [[policy]] entry) names an identity selector, a plugin scope
// (plugins and indices) and grants. Plugin grants (events, adjustment
// fields, update_others, evict_others, may_fail, max_timeout, endpoints and
// tcp_hosts) apply to the plugins in the rule's scope only; identity grants
// (admin, runtime) apply to the identity. When several rules match, their
// grants add up (the tcp_hosts of those that grant "tcp"), and the largest
// timeout cap wins (a rule without a cap lifts it).
//
// The socket owner — root and nrid's own uid ("uid:0", "uid:N") — may do
// everything, whatever the rules say. Nobody else may do anything that no
// rule grants. A launch identity ("launch:NN-name", a plugin nrid started
// from its plugin directory) that no rule mentions gets every plugin grant
// for its own slot and nothing else; a rule that matches it replaces that
// default. Launch identities are only accepted for processes of an owner
// uid, so a stranger who creates a launch slot's socket gains nothing.
//
// A policy is immutable and safe for concurrent use.
package policy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/selector"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// Options configure a Policy.
type Options struct {
	// Owners are the uids that may do everything. Default: 0 and the
	// process's uid.
	Owners []uint32
	// PluginSocketDir is the directory unix endpoints must be in (default
	// server.DefaultPluginSocketDir).
	PluginSocketDir string
	// Plugins are the operator's [[plugin]] entries.
	Plugins []PluginRule
	// Groups returns the group ids of a uid's user (default: the user
	// database through os/user). Used by "gid:N" rules only.
	Groups func(uid uint32) ([]uint32, error)
}

// Policy is a compiled authorization policy.
type Policy struct {
	rules    []*rule
	owners   []uint32
	dir      string
	plugins  map[string]pluginSettings // by "NN-name" or "name"
	required []string
	groups   func(uint32) ([]uint32, error)
	hasGID   bool

	cache     sync.Map // identity "\x00" full -> *grants
	cached    atomic.Int64
	groupMu   sync.Mutex
	groupMemo map[uint32][]uint32
}

type pluginSettings struct {
	required, keepConnected, waitOnRestart *bool
	maxTimeout                             time.Duration
	notReady                               nriv1beta1.NotReadyPolicy
	selectors                              []*nriv1beta1.EventSelector
}

var _ server.Authorizer = (*Policy)(nil)

// New compiles rules. Errors are *RuleError naming the TOML key
// ("policy[1].events[0]", "plugin[0].name").
func New(rules []Rule, o Options) (*Policy, error) {
	p := &Policy{
		owners:    o.Owners,
		dir:       o.PluginSocketDir,
		plugins:   map[string]pluginSettings{},
		groups:    o.Groups,
		groupMemo: map[uint32][]uint32{},
	}
	if len(p.owners) == 0 {
		p.owners = []uint32{0, uint32(os.Getuid())}
	}
	if p.dir == "" {
		p.dir = server.DefaultPluginSocketDir
	}
	p.dir = filepath.Clean(p.dir)
	if p.groups == nil {
		p.groups = userGroups
	}
	for i, r := range rules {
		c, err := compile(i, r)
		if err != nil {
			return nil, err
		}
		if c.match.kind == kindGID {
			p.hasGID = true
		}
		p.rules = append(p.rules, c)
	}
	for i, pr := range o.Plugins {
		key := func(k string) string { return fmt.Sprintf("plugin[%d].%s", i, k) }
		if _, err := parsePluginPattern(pr.Name); err != nil || pr.Name == "*" {
			if err == nil {
				err = fmt.Errorf("must name one plugin, \"NN-name\" or \"name\"")
			}
			return nil, &RuleError{Key: key("name"), Err: err}
		}
		if _, dup := p.plugins[pr.Name]; dup {
			return nil, &RuleError{Key: key("name"), Err: fmt.Errorf("plugin %q is already configured by an earlier [[plugin]]", pr.Name)}
		}
		s := pluginSettings{required: pr.Required, keepConnected: pr.KeepConnected, waitOnRestart: pr.WaitOnRestart}
		if pr.MaxTimeout != "" {
			d, err := time.ParseDuration(pr.MaxTimeout)
			if err != nil || d <= 0 {
				return nil, &RuleError{Key: key("max_timeout"), Err: fmt.Errorf("%q is not a positive duration (for example \"2s\")", pr.MaxTimeout)}
			}
			s.maxTimeout = d
		}
		nr, err := ParseNotReady(pr.NotReady)
		if err != nil {
			return nil, &RuleError{Key: key("not_ready"), Err: err}
		}
		s.notReady = nr
		var serr *selector.Error
		if s.selectors, serr = compileSelectors(pr.Selectors); serr != nil {
			return nil, &RuleError{Key: key(serr.Field), Err: errors.New(serr.Rule)}
		}
		p.plugins[pr.Name] = s
		if pr.Required != nil && *pr.Required {
			p.required = append(p.required, pr.Name)
		}
	}
	return p, nil
}

// RequiredPlugins lists the [[plugin]] entries with required = true: they
// join the validator's required plugins, so their absence fails creating
// events like their failures do.
func (p *Policy) RequiredPlugins() []string { return slices.Clone(p.required) }

// Known reports whether identity has grants of its own: it is an owner or
// some rule names it (wildcard rules included). The authenticator prefers a
// known certificate identity over a bearer token.
func (p *Policy) Known(identity string) bool {
	if p.isOwner(identity) {
		return true
	}
	for _, r := range p.rules {
		if p.matches(r, identity) {
			return true
		}
	}
	return false
}

// grants are what an identity (optionally: for one plugin) may do.
type grants struct {
	owner      bool
	grant      Grant
	events     uint32
	maxTimeout time.Duration // 0: no cap
	matched    bool          // some rule matched
	tcpHosts   tcpHosts      // of the rules that grant "tcp" for the plugin
	tcpRules   []int         // their indices
}

func (p *Policy) isOwner(identity string) bool {
	kind, v, _ := strings.Cut(identity, ":")
	if kind != kindUID {
		return false
	}
	n, err := strconv.ParseUint(v, 10, 32)
	return err == nil && slices.Contains(p.owners, uint32(n))
}

// grantsFor resolves the grants of identity; for a plugin full name
// ("NN-name") the plugin grants of the rules whose scope has it, for ""
// the identity grants.
func (p *Policy) grantsFor(identity, full string) *grants {
	key := identity + "\x00" + full
	if g, ok := p.cache.Load(key); ok {
		return g.(*grants)
	}
	g := p.resolve(identity, full)
	// Callers choose plugin names: bound what they can make the cache hold.
	if p.cached.Add(1) <= maxCached {
		p.cache.Store(key, g)
	}
	return g
}

// maxCached bounds the resolved grants kept; beyond it they are resolved on
// every call.
const maxCached = 8192

func (p *Policy) resolve(identity, full string) *grants {
	if p.isOwner(identity) {
		return &grants{owner: true, grant: GrantAll, events: allEvents, matched: true}
	}
	var idx, name string
	if full != "" {
		var err error
		if idx, name, err = splitFull(full); err != nil {
			return &grants{}
		}
	}
	g := &grants{}
	anyRule := false
	uncapped := false
	for _, r := range p.rules {
		if !p.matches(r, identity) {
			continue
		}
		anyRule = true
		g.grant |= r.grants &^ pluginGrants
		if full == "" || !r.matchesPlugin(idx, name) {
			continue
		}
		g.matched = true
		g.grant |= r.grants & pluginGrants
		g.events |= r.events
		if r.grants&GrantTCP != 0 {
			g.tcpHosts.add(r.tcpHosts)
			g.tcpRules = append(g.tcpRules, r.index)
		}
		if r.maxTimeout == 0 {
			uncapped = true
		} else {
			g.maxTimeout = max(g.maxTimeout, r.maxTimeout)
		}
	}
	if uncapped {
		g.maxTimeout = 0
	}
	if !anyRule && strings.HasPrefix(identity, kindLaunch+":") && full != "" && identity == kindLaunch+":"+full {
		// A launched plugin the rules do not mention: the operator put it in
		// nrid's plugin directory, so it gets the plugin grants of its slot.
		return &grants{grant: pluginGrants, events: allEvents, matched: true}
	}
	return g
}

// matches reports whether rule r selects identity.
func (p *Policy) matches(r *rule, identity string) bool {
	m := r.match
	if m.kind == kindAny {
		return true
	}
	kind, v, ok := strings.Cut(identity, ":")
	if !ok {
		return false
	}
	if m.kind == kindGID {
		if kind != kindUID {
			return false
		}
		uid, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return false
		}
		return slices.Contains(p.groupsOf(uint32(uid)), m.num)
	}
	if kind != m.kind {
		return false
	}
	return m.value == "" || m.value == v
}

func (p *Policy) groupsOf(uid uint32) []uint32 {
	p.groupMu.Lock()
	defer p.groupMu.Unlock()
	if g, ok := p.groupMemo[uid]; ok {
		return g
	}
	g, _ := p.groups(uid)
	p.groupMemo[uid] = g
	return g
}

// userGroups returns the groups of uid's user from the user database.
func userGroups(uid uint32) ([]uint32, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return nil, err
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	var out []uint32
	for _, s := range ids {
		if n, err := strconv.ParseUint(s, 10, 32); err == nil {
			out = append(out, uint32(n))
		}
	}
	return out, nil
}

// denyRegistration builds the PERMISSION_DENIED status of a refused
// registration, with the ErrorInfo and BadRequest details of the server's
// own refusals.
func denyRegistration(why nriv1beta1.RegistrationRefusal, field, format string, args ...any) error {
	return refuseRegistration(codes.PermissionDenied, why, field, format, args...)
}

// refuseRegistration is denyRegistration with another status code.
func refuseRegistration(code codes.Code, why nriv1beta1.RegistrationRefusal, field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	st := status.New(code, msg)
	info := &errdetails.ErrorInfo{Reason: why.String(), Domain: nri.ErrorDomain}
	if field != "" {
		info.Metadata = map[string]string{"field": field}
		if d, err := st.WithDetails(info, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: field, Description: msg},
		}}); err == nil {
			return d.Err()
		}
		return st.Err()
	}
	if d, err := st.WithDetails(info); err == nil {
		return d.Err()
	}
	return st.Err()
}

// AuthorizeRegistration implements server.Authorizer: id may register the
// plugin's name and index, with an endpoint of a form its rules allow.
func (p *Policy) AuthorizeRegistration(_ context.Context, id server.Identity, req *nriv1beta1.RegisterPluginRequest) error {
	full := req.GetPluginIdx() + "-" + req.GetPluginName()
	if strings.HasPrefix(id.Name, kindLaunch+":") {
		if !id.Unix || !slices.Contains(p.owners, id.UID) {
			return denyRegistration(nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_NOT_PERMITTED, "endpoint",
				"endpoint: %s is a launch slot; only processes of uid %v may use it, not %s", req.GetEndpoint(), p.owners, describe(id))
		}
		if id.Name != kindLaunch+":"+full {
			return denyRegistration(nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_NOT_PERMITTED, "plugin_name",
				"plugin_name: identity %q may only register its own slot, not %s", id.Name, full)
		}
	}
	g := p.grantsFor(id.Name, full)
	if !g.matched {
		return denyRegistration(nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_NOT_PERMITTED, "plugin_name",
			"plugin_name: identity %q may not register plugin %s: no [[policy]] entry grants it", id.Name, full)
	}
	form, err := p.endpointForm(req.GetEndpoint())
	if err != nil {
		return denyRegistration(nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_ENDPOINT, "endpoint", "endpoint: %v", err)
	}
	if form != 0 && g.grant&form == 0 {
		return denyRegistration(nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_ENDPOINT, "endpoint",
			"endpoint: identity %q may not register plugin %s with endpoint %q: it lacks the %s grant",
			id.Name, full, req.GetEndpoint(), form)
	}
	if form == GrantTCP {
		return p.authorizeTCPHost(id, full, req.GetEndpoint(), g)
	}
	return nil
}

// authorizeTCPHost checks the host of a TCP endpoint against the tcp_hosts
// of the rules that grant id "tcp" for plugin full. Owners may name any
// host. A malformed endpoint is INVALID_ARGUMENT; a host outside the lists
// is PERMISSION_DENIED naming the rules: the refusal depends on the
// configuration and the request only, never on the node's state, so it
// can be precise.
func (p *Policy) authorizeTCPHost(id server.Identity, full, endpoint string, g *grants) error {
	host, _, err := transport.SplitTCPEndpoint(endpoint)
	if err != nil {
		return refuseRegistration(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_ENDPOINT, "endpoint",
			"endpoint: %v", err)
	}
	if g.owner || g.tcpHosts.allows(host) {
		return nil
	}
	rules := "no [[policy]] entry lists hosts for it"
	if len(g.tcpRules) > 0 {
		keys := make([]string, len(g.tcpRules))
		for i, n := range g.tcpRules {
			keys[i] = fmt.Sprintf("policy[%d].tcp_hosts", n)
		}
		rules = "it is not in " + strings.Join(keys, ", ")
	}
	return denyRegistration(nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_ENDPOINT, "endpoint",
		"endpoint: identity %q may not register plugin %s with endpoint %s: host %s is not allowed: %s",
		id.Name, full, strconv.Quote(endpoint), strconv.Quote(host), rules)
}

func describe(id server.Identity) string {
	if id.Unix {
		return fmt.Sprintf("uid:%d", id.UID)
	}
	return strconv.Quote(id.Name)
}

// endpointForm classifies an endpoint: GrantUnix for a unix socket in the
// plugin socket directory, GrantTCP for a network address (whose host
// authorizeTCPHost checks), 0 for none (an in-process plugin). A unix
// socket elsewhere is an error.
func (p *Policy) endpointForm(endpoint string) (Grant, error) {
	switch {
	case endpoint == "":
		return 0, nil
	case strings.HasPrefix(endpoint, "unix:"), strings.HasPrefix(endpoint, "/"):
		path := strings.TrimPrefix(strings.TrimPrefix(endpoint, "unix://"), "unix:")
		if !filepath.IsAbs(path) {
			return 0, fmt.Errorf("%q is not an absolute unix socket path", endpoint)
		}
		if !strings.HasPrefix(filepath.Clean(path), p.dir+string(filepath.Separator)) {
			return 0, fmt.Errorf("%q is outside the plugin socket directory %s", endpoint, p.dir)
		}
		return GrantUnix, nil
	case strings.HasPrefix(endpoint, "unix-abstract:"):
		return 0, fmt.Errorf("%q: abstract unix sockets are not allowed; use a socket in %s", endpoint, p.dir)
	}
	return GrantTCP, nil
}

// AuthorizeSubscription implements server.Authorizer.
func (p *Policy) AuthorizeSubscription(identity, full string, mask uint32) error {
	g := p.grantsFor(identity, full)
	if extra := mask &^ g.events; extra != 0 {
		return fmt.Errorf("identity %q may not receive events %s as plugin %s (granted: %s)", identity,
			strings.Join(EventNames(extra), ", "), full, eventList(g.events))
	}
	return nil
}

func eventList(mask uint32) string {
	if mask == 0 {
		return "none"
	}
	if mask == allEvents {
		return "all"
	}
	return strings.Join(EventNames(mask), ", ")
}

// PluginPolicy is the function for server.WithPluginPolicy: the operator's
// [[plugin]] entry for full (an "NN-name" entry wins over a "name" entry),
// the failure policy "fail" downgraded for identities without may_fail, and
// the smaller of the [[plugin]] and grant timeout caps.
func (p *Policy) PluginPolicy(identity, full string) *server.PluginPolicy {
	s, ok := p.settings(full)
	g := p.grantsFor(identity, full)
	out := &server.PluginPolicy{}
	if ok {
		out.Required = s.required
		out.KeepConnected = s.keepConnected
		out.MaxTimeout = s.maxTimeout
		out.NotReady = s.notReady
		out.Selectors = s.selectors
	}
	if out.Required == nil && g.grant&GrantMayFail == 0 {
		no := false
		out.Required = &no
	}
	if g.maxTimeout > 0 && (out.MaxTimeout == 0 || g.maxTimeout < out.MaxTimeout) {
		out.MaxTimeout = g.maxTimeout
	}
	if !ok && out.Required == nil && out.MaxTimeout == 0 && out.Selectors == nil {
		return nil
	}
	return out
}

// ParseNotReady parses a not_ready setting: "wait", "fail", "skip", or ""
// (UNSPECIFIED: the default applies).
func ParseNotReady(v string) (nriv1beta1.NotReadyPolicy, error) {
	switch v {
	case "":
		return nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_UNSPECIFIED, nil
	case "wait":
		return nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_WAIT, nil
	case "fail":
		return nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_FAIL, nil
	case "skip":
		return nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_SKIP, nil
	}
	return 0, fmt.Errorf("%q is not one of \"wait\", \"fail\", \"skip\"", v)
}

// Service names whose access the policy decides.
var (
	adminPrefix      = "/" + nriv1beta1.AdminService_ServiceDesc.ServiceName + "/"
	adaptationPrefix = "/" + nriv1beta1.AdaptationService_ServiceDesc.ServiceName + "/"
	runtimePrefix    = "/" + nriv1beta1.RuntimeService_ServiceDesc.ServiceName + "/"
)

// Open methods need no grant: health for everybody (the interceptor does
// not even authenticate it), reflection for every authenticated caller (it
// describes the public API, nothing of the node).
func Open(fullMethod string) bool {
	return strings.HasPrefix(fullMethod, "/grpc.health.v1.Health/") ||
		strings.HasPrefix(fullMethod, "/grpc.reflection.v1.ServerReflection/") ||
		strings.HasPrefix(fullMethod, "/grpc.reflection.v1alpha.ServerReflection/")
}

// AuthorizeCall is the per-service access check of the interceptor:
// AdminService needs the admin grant, AdaptationService the runtime grant,
// RuntimeService a rule that lets the identity register some plugin (the
// server then checks the particular plugin), health and reflection nothing.
// Anything else is refused.
func (p *Policy) AuthorizeCall(id server.Identity, fullMethod string) error {
	if Open(fullMethod) {
		return nil
	}
	switch {
	case strings.HasPrefix(fullMethod, adminPrefix):
		if p.grantsFor(id.Name, "").grant&GrantAdmin == 0 {
			return status.Errorf(codes.PermissionDenied, "identity %q lacks the admin grant (AdminService)", id.Name)
		}
		return nil
	case strings.HasPrefix(fullMethod, adaptationPrefix):
		if p.grantsFor(id.Name, "").grant&GrantRuntime == 0 {
			return status.Errorf(codes.PermissionDenied, "identity %q lacks the runtime grant (AdaptationService)", id.Name)
		}
		return nil
	case strings.HasPrefix(fullMethod, runtimePrefix):
		if !p.mayRegisterSome(id.Name) {
			return denyRegistration(nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_NOT_PERMITTED, "",
				"identity %q may not register plugins: no [[policy]] entry grants it any", id.Name)
		}
		return nil
	}
	return status.Errorf(codes.PermissionDenied, "no policy covers %s", fullMethod)
}

// mayRegisterSome reports whether some plugin is in identity's scope.
func (p *Policy) mayRegisterSome(identity string) bool {
	if p.isOwner(identity) || strings.HasPrefix(identity, kindLaunch+":") {
		return true
	}
	for _, r := range p.rules {
		if len(r.plugins) > 0 && p.matches(r, identity) {
			return true
		}
	}
	return false
}

// compileSelectors checks a [[plugin]] entry's selectors with the server's
// rules; an error's Field is "selectors[i].field".
func compileSelectors(rules []SelectorRule) ([]*nriv1beta1.EventSelector, *selector.Error) {
	if len(rules) == 0 {
		return nil, nil
	}
	sels := make([]*nriv1beta1.EventSelector, len(rules))
	for i, r := range rules {
		sels[i] = &nriv1beta1.EventSelector{Namespaces: r.Namespaces, PodLabels: r.PodLabels,
			ContainerNames: r.ContainerNames, RuntimeHandlers: r.RuntimeHandlers}
	}
	if _, err := selector.Compile(sels); err != nil {
		var se *selector.Error
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, &selector.Error{Field: "selectors", Rule: err.Error()}
	}
	return sels, nil
}

// settings returns the [[plugin]] entry for full ("NN-name"): an "NN-name"
// entry wins over a "name" entry.
func (p *Policy) settings(full string) (pluginSettings, bool) {
	s, ok := p.plugins[full]
	if !ok {
		if _, name, err := splitFull(full); err == nil {
			s, ok = p.plugins[name]
		}
	}
	return s, ok
}

// WaitOnRestart returns what the [[plugin]] entry for full ("NN-name")
// says about waiting for the plugin after a restart or a takeover
// (wait_on_restart), and whether it says anything.
func (p *Policy) WaitOnRestart(full string) (wait, set bool) {
	if s, ok := p.settings(full); ok && s.waitOnRestart != nil {
		return *s.waitOnRestart, true
	}
	return false, false
}

// Required reports whether the [[plugin]] entry for full ("NN-name") says
// required = true.
func (p *Policy) Required(full string) bool {
	s, ok := p.settings(full)
	return ok && s.required != nil && *s.required
}

// Selectors returns the selectors of the [[plugin]] entries that name one
// plugin ("NN-name") and have selectors, by full name: what those plugins
// select while they are absent (server.RememberSelectors).
func (p *Policy) Selectors() map[string][]*nriv1beta1.EventSelector {
	out := map[string][]*nriv1beta1.EventSelector{}
	for name, s := range p.plugins {
		if len(s.selectors) > 0 && len(name) > 3 && name[2] == '-' && name[0] >= '0' && name[0] <= '9' && name[1] >= '0' && name[1] <= '9' {
			out[name] = s.selectors
		}
	}
	return out
}
