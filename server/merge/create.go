package merge

import (
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Create merges the CreateContainer responses of plugins, in dispatch order.
//
// A Create is not safe for concurrent use. It keeps references to the
// messages of the responses it applies (they end up in the request and in
// the result); callers must not modify a response after applying it. Apply
// never modifies a response.
type Create struct {
	req  *nriv1beta1.CreateContainerRequest
	ctr  *nriv1beta1.Container
	id   string
	self *fieldOwners // owners of the container being created, lazily

	reply *nriv1beta1.ContainerAdjustment // nil until something is adjusted
	upd   updates

	keepPristine bool
	reshaped     bool // NewCreate added messages req.Container lacked
	touched      bool // req.Container was modified at least once
	pristine     *nriv1beta1.Container

	// State of the current Apply call.
	plugin  string
	rec     recorder
	changed bool
}

// CreateOption configures a Create.
type CreateOption func(*Create)

// WithoutPristine tells NewCreate that Pristine will not be needed (no
// validator is registered): the container is then not cloned before the
// first change, and Pristine returns nil once a plugin changed it.
func WithoutPristine() CreateOption {
	return func(c *Create) { c.keepPristine = false }
}

// NewCreate prepares the merging of the CreateContainer responses for req.
// As classic NRI does, it normalizes req.Container in place so that plugins
// see the same shape: a nil container, hooks, linux part, resources, memory
// or cpu becomes an empty message. (Nil maps and slices are left nil: on the
// wire and to every getter they are the same as empty, and they are created
// when a plugin writes to them.) Call it before encoding the request for the
// first plugin.
func NewCreate(req *nriv1beta1.CreateContainerRequest, opts ...CreateOption) *Create {
	reshaped := false
	if req.Container == nil {
		req.Container, reshaped = &nriv1beta1.Container{}, true
	}
	ctr := req.Container
	if ctr.Hooks == nil {
		ctr.Hooks, reshaped = &nriv1beta1.Hooks{}, true
	}
	if ctr.Linux == nil {
		ctr.Linux, reshaped = &nriv1beta1.LinuxContainer{}, true
	}
	if ctr.Linux.Resources == nil {
		ctr.Linux.Resources, reshaped = &nriv1beta1.LinuxResources{}, true
	}
	if ctr.Linux.Resources.Memory == nil {
		ctr.Linux.Resources.Memory, reshaped = &nriv1beta1.LinuxMemory{}, true
	}
	if ctr.Linux.Resources.Cpu == nil {
		ctr.Linux.Resources.Cpu, reshaped = &nriv1beta1.LinuxCPU{}, true
	}
	c := &Create{
		reshaped:     reshaped,
		req:          req,
		ctr:          ctr,
		id:           ctr.Id,
		keepPristine: true,
	}
	c.upd.creating, c.upd.creatingID = true, ctr.Id
	for _, o := range opts {
		o(c)
	}
	return c
}

// Reshaped reports whether NewCreate added messages the request lacked:
// an encoding of the request made before NewCreate lacks them too.
func (c *Create) Reshaped() bool { return c.reshaped }

// Apply merges the response of plugin (its full name, "NN-name") into the
// result, and writes the accepted changes into the request's container too,
// so that the next plugin sees them; RDT, memory policy and CDI devices go
// to the result only, as in classic NRI. It reports whether the request's
// container was modified (the request needs re-encoding only then).
//
// When changes is not nil, one FieldChange is appended per changed field or
// entry (of the container being created or of an updated container), with
// the value rendered as text; values are not redacted here. Key is the entry
// of a compound field, the hook point ("prestart", "create_runtime", ...)
// for hooks, KeyDeviceCgroupRule for device cgroup rules, and empty for
// simple fields. A removal or RDT remove is recorded with removed set; a
// remove-then-add in one response as the addition. Updates dropped under
// ignore_failure record nothing; evictions are not field changes.
//
// Errors are a *ConflictError for an ownership conflict, and a
// *SelfUpdateError for an update of the container being created. After an
// error the event is to fail: what was applied before it is not rolled back.
// A conflicting update with ignore_failure set is not an error: the update
// is dropped whole.
func (c *Create) Apply(plugin string, rsp *nriv1beta1.CreateContainerResponse, changes *[]*nriv1beta1.FieldChange) (changed bool, err error) {
	if rsp == nil {
		return false, nil
	}
	c.plugin, c.rec, c.changed = plugin, recorder{changes}, false
	defer func() { c.rec = recorder{} }()

	if a := rsp.Adjust; a != nil {
		if err := c.adjust(a); err != nil {
			return c.changed, err
		}
	}
	if len(rsp.Update) > 0 {
		if _, err := c.upd.apply(plugin, rsp.Update, c.rec); err != nil {
			return c.changed, err
		}
	}
	c.upd.evict(rsp.Evict)
	return c.changed, nil
}

// Result returns the merged result. Adjust is nil when no plugin adjusted
// anything, and holds no empty sub-message. Update holds one merged update
// per container, in the order containers were first updated. Evict holds
// the evictions plugins asked for, one per container (the first reason
// wins). A merged update always has linux.resources (the frame of its
// fields), with memory and cpu only when set. The result shares messages
// with the Create and the request: call it after the last Apply.
func (c *Create) Result() *nriv1beta1.AdaptationServiceCreateContainerResponse {
	return &nriv1beta1.AdaptationServiceCreateContainerResponse{
		Adjust: c.reply,
		Update: c.upd.list,
		Evict:  c.upd.evictions,
	}
}

// Owners returns which plugin owns each adjusted or updated field, per
// container, as handed to validators.
func (c *Create) Owners() *nriv1beta1.OwningPlugins {
	return c.upd.own.proto()
}

// Pristine returns the container as it was before any plugin changed it
// (after normalization), for validation. The copy is taken when the first
// change is about to be made (none is made if no plugin changes anything).
// It is nil if WithoutPristine was given and a plugin changed the container.
func (c *Create) Pristine() *nriv1beta1.Container {
	if c.pristine == nil && !c.touched {
		c.pristine = c.ctr.CloneVT()
	}
	return c.pristine
}

// mut must be called before every write to the request's container.
func (c *Create) mut() {
	if !c.touched {
		c.touched = true
		if c.keepPristine && c.pristine == nil {
			c.pristine = c.ctr.CloneVT()
		}
	}
	c.changed = true
}

// fo returns the owners of the container being created.
func (c *Create) fo() *fieldOwners {
	if c.self == nil {
		c.self = c.upd.own.of(c.id)
	}
	return c.self
}

func (c *Create) ra() *nriv1beta1.ContainerAdjustment {
	if c.reply == nil {
		c.reply = &nriv1beta1.ContainerAdjustment{}
	}
	return c.reply
}

func (c *Create) rl() *nriv1beta1.LinuxContainerAdjustment {
	a := c.ra()
	if a.Linux == nil {
		a.Linux = &nriv1beta1.LinuxContainerAdjustment{}
	}
	return a.Linux
}

func (c *Create) replyResources() *nriv1beta1.LinuxResources {
	l := c.rl()
	if l.Resources == nil {
		l.Resources = &nriv1beta1.LinuxResources{}
	}
	return l.Resources
}

func (c *Create) note(field nriv1beta1.Field, key, value string, removed bool) {
	c.rec.add(c.id, field, key, value, removed)
}

// adjust merges one adjustment, field by field in classic NRI's order (which
// decides the conflict reported first).
func (c *Create) adjust(a *nriv1beta1.ContainerAdjustment) error {
	if len(a.Annotations) > 0 {
		if err := mergeMap(c, nriv1beta1.Field_FIELD_ANNOTATIONS, a.Annotations,
			&c.ctr.Annotations, &c.ra().Annotations, emptyString, renderString); err != nil {
			return err
		}
	}
	if len(a.Mounts) > 0 {
		if err := mergeList(c, nriv1beta1.Field_FIELD_MOUNTS, a.Mounts, &c.ra().Mounts, mountOps); err != nil {
			return err
		}
	}
	if len(a.Env) > 0 {
		if err := mergeList(c, nriv1beta1.Field_FIELD_ENV, a.Env, &c.ra().Env, envOps); err != nil {
			return err
		}
	}
	if len(a.Args) > 0 {
		if err := c.adjustArgs(a.Args); err != nil {
			return err
		}
	}
	if a.Hooks != nil {
		c.adjustHooks(a.Hooks)
	}
	if l := a.Linux; l != nil {
		if err := c.adjustLinux(l); err != nil {
			return err
		}
	}
	if err := c.adjustRlimits(a.Rlimits); err != nil {
		return err
	}
	return c.adjustCDIDevices(a.CdiDevices)
}

// adjustRlimits appends rlimits, claimed by type.
func (c *Create) adjustRlimits(in []*nriv1beta1.POSIXRlimit) error {
	for _, l := range in {
		if l == nil {
			continue
		}
		if err := c.fo().claimCompound(nriv1beta1.Field_FIELD_RLIMITS, l.Type, c.plugin); err != nil {
			return err
		}
		c.mut()
		c.ctr.Rlimits = append(c.ctr.Rlimits, l)
		c.ra().Rlimits = append(c.ra().Rlimits, l)
		if c.rec.on() {
			c.note(nriv1beta1.Field_FIELD_RLIMITS, l.Type, renderRlimit(l), false)
		}
	}
	return nil
}

// adjustCDIDevices appends CDI devices, claimed by name, to the reply only.
func (c *Create) adjustCDIDevices(in []*nriv1beta1.CDIDevice) error {
	for _, d := range in {
		if d == nil {
			continue
		}
		if err := c.fo().claimCompound(nriv1beta1.Field_FIELD_CDI_DEVICES, d.Name, c.plugin); err != nil {
			return err
		}
		c.ra().CdiDevices = append(c.ra().CdiDevices, d)
		if c.rec.on() {
			c.note(nriv1beta1.Field_FIELD_CDI_DEVICES, d.Name, "", false)
		}
	}
	return nil
}

// linuxStep merges one field, or one keyed list or map, of a linux
// adjustment.
type linuxStep func(c *Create, l *nriv1beta1.LinuxContainerAdjustment) error

// linuxSteps are the steps of adjustLinux, in classic NRI's order (which
// decides the conflict reported first).
var linuxSteps = [...]linuxStep{
	(*Create).adjustDevices,
	(*Create).adjustResources,
	linuxScalar(nriv1beta1.Field_FIELD_CGROUPS_PATH,
		func(a *nriv1beta1.LinuxContainerAdjustment) *string { return &a.CgroupsPath },
		func(l *nriv1beta1.LinuxContainer) *string { return &l.CgroupsPath }, renderString),
	linuxScalar(nriv1beta1.Field_FIELD_OOM_SCORE_ADJ,
		func(a *nriv1beta1.LinuxContainerAdjustment) **wrapperspb.Int64Value { return &a.OomScoreAdj },
		func(l *nriv1beta1.LinuxContainer) **wrapperspb.Int64Value { return &l.OomScoreAdj }, i64),
	linuxScalar(nriv1beta1.Field_FIELD_IO_PRIORITY,
		func(a *nriv1beta1.LinuxContainerAdjustment) **nriv1beta1.LinuxIOPriority { return &a.IoPriority },
		func(l *nriv1beta1.LinuxContainer) **nriv1beta1.LinuxIOPriority { return &l.IoPriority }, renderIOPriority),
	linuxScalar(nriv1beta1.Field_FIELD_SECCOMP_POLICY,
		func(a *nriv1beta1.LinuxContainerAdjustment) **nriv1beta1.LinuxSeccomp { return &a.SeccompPolicy },
		func(l *nriv1beta1.LinuxContainer) **nriv1beta1.LinuxSeccomp { return &l.SeccompPolicy }, renderSeccomp),
	(*Create).adjustNamespaces,
	(*Create).adjustSysctl,
	(*Create).adjustNetDevices,
	linuxScalar(nriv1beta1.Field_FIELD_LINUX_SCHED,
		func(a *nriv1beta1.LinuxContainerAdjustment) **nriv1beta1.LinuxScheduler { return &a.Scheduler },
		func(l *nriv1beta1.LinuxContainer) **nriv1beta1.LinuxScheduler { return &l.Scheduler }, renderScheduler),
	(*Create).adjustRdt,
	// The memory policy goes to the reply only, as in classic NRI.
	linuxScalar(nriv1beta1.Field_FIELD_MEMORY_POLICY,
		func(a *nriv1beta1.LinuxContainerAdjustment) **nriv1beta1.LinuxMemoryPolicy { return &a.MemoryPolicy },
		nil, renderMemoryPolicy),
}

// adjustLinux merges the linux part of an adjustment.
func (c *Create) adjustLinux(l *nriv1beta1.LinuxContainerAdjustment) error {
	for _, step := range linuxSteps {
		if err := step(c, l); err != nil {
			return err
		}
	}
	return nil
}

// linuxScalar returns the step of a simple field of the linux part: an
// optional message (nil when unset) or a string ("" when unset). at gives
// the field in an adjustment: it is read in the plugin's, written in the
// reply. req gives the field in the request's container, which is written
// too unless req is nil.
func linuxScalar[V comparable](field nriv1beta1.Field, at func(*nriv1beta1.LinuxContainerAdjustment) *V,
	req func(*nriv1beta1.LinuxContainer) *V, render func(V) string) linuxStep {
	return func(c *Create, l *nriv1beta1.LinuxContainerAdjustment) error {
		var unset V
		v := *at(l)
		if v == unset {
			return nil
		}
		if err := c.fo().claimSimple(field, c.plugin); err != nil {
			return err
		}
		if req != nil {
			c.mut()
			*req(c.ctr.Linux) = v
		}
		*at(c.rl()) = v
		if c.rec.on() {
			c.note(field, "", render(v), false)
		}
		return nil
	}
}

// adjustDevices merges the devices, keyed by path.
func (c *Create) adjustDevices(l *nriv1beta1.LinuxContainerAdjustment) error {
	if len(l.Devices) == 0 {
		return nil
	}
	return mergeList(c, nriv1beta1.Field_FIELD_DEVICES, l.Devices, &c.rl().Devices, deviceOps)
}

// adjustResources merges the resources into the request's container and
// the reply.
func (c *Create) adjustResources(l *nriv1beta1.LinuxContainerAdjustment) error {
	if l.Resources == nil {
		return nil
	}
	m := resMerge{
		mode:   resAdjust,
		own:    c.self,
		table:  &c.upd.own,
		plugin: c.plugin,
		id:     c.id,
		dst:    c.ctr.Linux.Resources,
		mirror: c,
		rec:    c.rec,
	}
	_, err := m.run(l.Resources)
	return err
}

// adjustSysctl merges the sysctl entries, keyed by name.
func (c *Create) adjustSysctl(l *nriv1beta1.LinuxContainerAdjustment) error {
	if len(l.Sysctl) == 0 {
		return nil
	}
	return mergeMap(c, nriv1beta1.Field_FIELD_SYSCTL, l.Sysctl,
		&c.ctr.Linux.Sysctl, &c.rl().Sysctl, emptyString, renderString)
}

// adjustNetDevices merges the network devices, keyed by host name.
func (c *Create) adjustNetDevices(l *nriv1beta1.LinuxContainerAdjustment) error {
	if len(l.NetDevices) == 0 {
		return nil
	}
	return mergeMap(c, nriv1beta1.Field_FIELD_LINUX_NET_DEVICES, l.NetDevices,
		&c.ctr.Linux.NetDevices, &c.rl().NetDevices, emptyNetDevice, renderNetDevice)
}

// adjustArgs replaces the arguments. A leading "" (UpdateArgs) first clears
// the previous owner, which lets the plugin override it.
func (c *Create) adjustArgs(args []string) error {
	if args[0] == "" {
		c.fo().clearSimple(nriv1beta1.Field_FIELD_ARGS, c.plugin)
		args = args[1:]
	}
	if err := c.fo().claimSimple(nriv1beta1.Field_FIELD_ARGS, c.plugin); err != nil {
		return err
	}
	// As in classic NRI, args of just [""] claim the field and leave the
	// request and the reply with no args (so the runtime keeps its own).
	v := slices.Clone(args)
	if v == nil {
		v = []string{}
	}
	c.mut()
	c.ctr.Args = v
	if len(v) > 0 {
		c.ra().Args = v
	} else if c.reply != nil {
		c.reply.Args = nil
	}
	if c.rec.on() {
		c.note(nriv1beta1.Field_FIELD_ARGS, "", joinArgs(v), false)
	}
	return nil
}

// hookKinds lists the hook points with their accessors and names.
var hookKinds = [...]struct {
	name string
	get  func(*nriv1beta1.Hooks) *[]*nriv1beta1.Hook
}{
	{"prestart", func(h *nriv1beta1.Hooks) *[]*nriv1beta1.Hook { return &h.Prestart }},
	{"poststart", func(h *nriv1beta1.Hooks) *[]*nriv1beta1.Hook { return &h.Poststart }},
	{"poststop", func(h *nriv1beta1.Hooks) *[]*nriv1beta1.Hook { return &h.Poststop }},
	{"create_runtime", func(h *nriv1beta1.Hooks) *[]*nriv1beta1.Hook { return &h.CreateRuntime }},
	{"create_container", func(h *nriv1beta1.Hooks) *[]*nriv1beta1.Hook { return &h.CreateContainer }},
	{"start_container", func(h *nriv1beta1.Hooks) *[]*nriv1beta1.Hook { return &h.StartContainer }},
}

// adjustHooks appends hooks; hooks never conflict, their owners accumulate.
func (c *Create) adjustHooks(h *nriv1beta1.Hooks) {
	claim := false
	for _, k := range hookKinds {
		in := *k.get(h)
		if len(in) == 0 {
			continue
		}
		a := c.ra()
		if a.Hooks == nil {
			a.Hooks = &nriv1beta1.Hooks{}
		}
		c.mut()
		rp, cp := k.get(a.Hooks), k.get(c.ctr.Hooks)
		*rp = append(*rp, in...)
		*cp = append(*cp, in...)
		claim = true
		if c.rec.on() {
			for _, x := range in {
				c.note(nriv1beta1.Field_FIELD_OCI_HOOKS, k.name, renderHook(x), false)
			}
		}
	}
	if claim {
		c.fo().accumulate(nriv1beta1.Field_FIELD_OCI_HOOKS, c.plugin)
	}
}

// adjustNamespaces merges namespaces like the other keyed lists: a "-type"
// entry removes that namespace (clearing its owner, so removing and then
// re-adding overrides an earlier plugin), an entry adds or replaces it.
// Classic NRI treated a namespace removal as a claim, so a plugin could not
// override another plugin's namespace; nri-grpc applies the override idiom
// uniformly (DESIGN §5.5).
//
// A removal always leaves an owner ("-plugin"), even of a namespace nobody
// set before, so the default validator's namespace check sees it.
func (c *Create) adjustNamespaces(l *nriv1beta1.LinuxContainerAdjustment) error {
	in := l.Namespaces
	if len(in) == 0 {
		return nil
	}
	if err := mergeList(c, nriv1beta1.Field_FIELD_NAMESPACE, in, &c.rl().Namespaces, namespaceOps); err != nil {
		return err
	}
	for _, n := range in {
		if key, marked := unmark(n.GetType()); marked && !namespaceAdded(in, key) {
			c.fo().clearCompound(nriv1beta1.Field_FIELD_NAMESPACE, key, c.plugin)
		}
	}
	return nil
}

var namespaceOps = listOps[*nriv1beta1.LinuxNamespace]{
	key:    (*nriv1beta1.LinuxNamespace).GetType,
	render: (*nriv1beta1.LinuxNamespace).GetPath,
	dropReq: func(c *Create, key string) bool {
		return dropWhere(c, &c.ctr.Linux.Namespaces, func(n *nriv1beta1.LinuxNamespace) bool { return n.GetType() == key })
	},
	addReq: func(c *Create, n *nriv1beta1.LinuxNamespace) {
		c.ctr.Linux.Namespaces = append(c.ctr.Linux.Namespaces, n)
	},
}

// adjustRdt merges RDT settings into the reply only. remove=true clears the
// owners of all three RDT fields and resets the reply's RDT to {remove:
// true}; any sub-field set afterwards turns remove off again (classic).
func (c *Create) adjustRdt(l *nriv1beta1.LinuxContainerAdjustment) error {
	rdt := l.Rdt
	if rdt == nil {
		return nil
	}
	if rdt.Remove {
		f := c.fo()
		f.clearSimple(nriv1beta1.Field_FIELD_RDT_CLOS_ID, c.plugin)
		f.clearSimple(nriv1beta1.Field_FIELD_RDT_SCHEMATA, c.plugin)
		f.clearSimple(nriv1beta1.Field_FIELD_RDT_ENABLE_MONITORING, c.plugin)
		c.rl().Rdt = &nriv1beta1.LinuxRdt{Remove: true}
		if c.rec.on() {
			c.note(nriv1beta1.Field_FIELD_RDT_CLOS_ID, "", "", true)
			c.note(nriv1beta1.Field_FIELD_RDT_SCHEMATA, "", "", true)
			c.note(nriv1beta1.Field_FIELD_RDT_ENABLE_MONITORING, "", "", true)
		}
	}
	rr := func() *nriv1beta1.LinuxRdt {
		l := c.rl()
		if l.Rdt == nil {
			l.Rdt = &nriv1beta1.LinuxRdt{}
		}
		return l.Rdt
	}
	if v := rdt.ClosId; v != nil {
		if err := c.fo().claimSimple(nriv1beta1.Field_FIELD_RDT_CLOS_ID, c.plugin); err != nil {
			return err
		}
		r := rr()
		r.ClosId, r.Remove = v, false
		if c.rec.on() {
			c.note(nriv1beta1.Field_FIELD_RDT_CLOS_ID, "", v.GetValue(), false)
		}
	}
	if v := rdt.Schemata; v != nil {
		if err := c.fo().claimSimple(nriv1beta1.Field_FIELD_RDT_SCHEMATA, c.plugin); err != nil {
			return err
		}
		r := rr()
		r.Schemata, r.Remove = v, false
		if c.rec.on() {
			c.note(nriv1beta1.Field_FIELD_RDT_SCHEMATA, "", strings.Join(v.GetValue(), ";"), false)
		}
	}
	if v := rdt.EnableMonitoring; v != nil {
		if err := c.fo().claimSimple(nriv1beta1.Field_FIELD_RDT_ENABLE_MONITORING, c.plugin); err != nil {
			return err
		}
		r := rr()
		r.EnableMonitoring, r.Remove = v, false
		if c.rec.on() {
			c.note(nriv1beta1.Field_FIELD_RDT_ENABLE_MONITORING, "", strconv.FormatBool(v.GetValue()), false)
		}
	}
	return nil
}

// unmark splits a removal marker "-key" into key.
func unmark(key string) (string, bool) {
	if len(key) > 0 && key[0] == '-' {
		return key[1:], true
	}
	return key, false
}

func emptyString() string                        { return "" }
func emptyNetDevice() *nriv1beta1.LinuxNetDevice { return &nriv1beta1.LinuxNetDevice{} }

// mergeMap merges a map adjustment (annotations, sysctl, net devices) keyed
// by entry, with "-key" removal markers:
//
//   - "k" (with or without "-k", the override idiom, which first clears the
//     owner): claims k, sets it in the request and the reply, and drops any
//     "-k" an earlier plugin left in the reply;
//   - "-k" alone (pure removal): drops k from the reply (an earlier plugin's
//     value, whose ownership is then cleared to "-plugin"), removes k from
//     the request, and puts "-k" in the reply.
//
// So the reply never holds both k and -k.
func mergeMap[V any](c *Create, field nriv1beta1.Field, in map[string]V, req, rep *map[string]V,
	marker func() V, render func(V) string) error {
	for k := range in {
		key, marked := unmark(k)
		if !marked {
			continue
		}
		if _, add := in[key]; add {
			continue
		}
		if _, set := (*rep)[key]; set {
			delete(*rep, key)
			c.fo().clearCompound(field, key, c.plugin)
		}
		if _, set := (*req)[key]; set {
			c.mut()
			delete(*req, key)
		}
		if *rep == nil {
			*rep = make(map[string]V, len(in))
		}
		(*rep)[k] = marker()
		if c.rec.on() {
			c.note(field, key, "", true)
		}
	}
	for k, v := range in {
		if _, marked := unmark(k); marked {
			continue
		}
		f := c.fo()
		mk := "-" + k
		if _, override := in[mk]; override {
			f.clearCompound(field, k, c.plugin)
		}
		if err := f.claimCompound(field, k, c.plugin); err != nil {
			return err
		}
		c.mut()
		if *req == nil {
			*req = make(map[string]V, len(in))
		}
		(*req)[k] = v
		if *rep == nil {
			*rep = make(map[string]V, len(in))
		}
		(*rep)[k] = v
		delete(*rep, mk)
		if c.rec.on() {
			c.note(field, k, render(v), false)
		}
	}
	return nil
}

// listOps describes a list adjustment (mounts, env, devices) to mergeList.
type listOps[T any] struct {
	key    func(T) string
	render func(T) string
	// dropReq removes the request container's entries for key; it reports
	// whether it found any.
	dropReq func(c *Create, key string) bool
	// addReq appends an entry to the request container.
	addReq func(c *Create, x T)
}

var mountOps = listOps[*nriv1beta1.Mount]{
	key:    (*nriv1beta1.Mount).GetDestination,
	render: renderMount,
	dropReq: func(c *Create, key string) bool {
		return dropWhere(c, &c.ctr.Mounts, func(m *nriv1beta1.Mount) bool { return m.GetDestination() == key })
	},
	addReq: func(c *Create, m *nriv1beta1.Mount) { c.ctr.Mounts = append(c.ctr.Mounts, m) },
}

var deviceOps = listOps[*nriv1beta1.LinuxDevice]{
	key:    (*nriv1beta1.LinuxDevice).GetPath,
	render: renderDevice,
	dropReq: func(c *Create, key string) bool {
		return dropWhere(c, &c.ctr.Linux.Devices, func(d *nriv1beta1.LinuxDevice) bool { return d.GetPath() == key })
	},
	addReq: func(c *Create, d *nriv1beta1.LinuxDevice) { c.ctr.Linux.Devices = append(c.ctr.Linux.Devices, d) },
}

var envOps = listOps[*nriv1beta1.KeyValue]{
	key:    (*nriv1beta1.KeyValue).GetKey,
	render: (*nriv1beta1.KeyValue).GetValue,
	dropReq: func(c *Create, key string) bool {
		return dropWhere(c, &c.ctr.Env, func(e string) bool {
			name, _, _ := strings.Cut(e, "=")
			return name == key
		})
	},
	addReq: func(c *Create, e *nriv1beta1.KeyValue) { c.ctr.Env = append(c.ctr.Env, e.Key+"="+e.Value) },
}

// dropWhere removes the entries of *s matching drop, in place, calling
// c.mut first if there is any.
func dropWhere[T any](c *Create, s *[]T, drop func(T) bool) bool {
	i := slices.IndexFunc(*s, drop)
	if i < 0 {
		return false
	}
	c.mut()
	*s = slices.DeleteFunc(*s, drop)
	return true
}

// mergeList merges a list adjustment keyed by entry (mount destination, env
// name, device path), with "-key" removal markers:
//
//   - an addition claims its key, replaces the request container's entries
//     for that key, is appended to the reply, and drops any "-key" marker an
//     earlier plugin left in the reply;
//   - a removal drops earlier plugins' entries for the key from the reply
//     (clearing their ownership to "-plugin") and removes the key from the
//     request container; if the response does not re-add the key (a pure
//     removal) the marker is appended to the reply, once, after the
//     additions.
//
// So the reply holds at most one entry per key: k or -k. Classic NRI drops
// env and device pure-removal markers and may keep -k next to k for mounts.
func mergeList[T comparable](c *Create, field nriv1beta1.Field, in []T, rep *[]T, ops listOps[T]) error {
	var zero T
	// Removals, first: they clear ownership before the additions claim.
	for i, x := range in {
		if x == zero {
			continue
		}
		key, marked := unmark(ops.key(x))
		if !marked || removedBefore(in[:i], key, ops) {
			continue
		}
		if j := indexKey(*rep, key, ops); j >= 0 {
			*rep = slices.Delete(*rep, j, j+1)
			c.fo().clearCompound(field, key, c.plugin)
		}
		ops.dropReq(c, key)
	}
	// Additions.
	for _, x := range in {
		if x == zero {
			continue
		}
		key := ops.key(x)
		if _, marked := unmark(key); marked {
			continue
		}
		if err := c.fo().claimCompound(field, key, c.plugin); err != nil {
			return err
		}
		if j := indexMarker(*rep, key, ops); j >= 0 {
			*rep = slices.Delete(*rep, j, j+1)
		}
		ops.dropReq(c, key)
		*rep = append(*rep, x)
		c.mut()
		ops.addReq(c, x)
		if c.rec.on() {
			c.note(field, key, ops.render(x), false)
		}
	}
	// Markers of pure removals.
	for i, x := range in {
		if x == zero {
			continue
		}
		key, marked := unmark(ops.key(x))
		if !marked || removedBefore(in[:i], key, ops) || addedIn(in, key, ops) {
			continue
		}
		if indexMarker(*rep, key, ops) < 0 {
			*rep = append(*rep, x)
		}
		if c.rec.on() {
			c.note(field, key, "", true)
		}
	}
	return nil
}

// indexKey returns the index of the (unmarked) entry for key in s, or -1.
func indexKey[T comparable](s []T, key string, ops listOps[T]) int {
	for i, x := range s {
		if ops.key(x) == key {
			return i
		}
	}
	return -1
}

// indexMarker returns the index of the removal marker for key in s, or -1.
func indexMarker[T comparable](s []T, key string, ops listOps[T]) int {
	for i, x := range s {
		if k, marked := unmark(ops.key(x)); marked && k == key {
			return i
		}
	}
	return -1
}

func removedBefore[T comparable](s []T, key string, ops listOps[T]) bool {
	var zero T
	for _, x := range s {
		if x == zero {
			continue
		}
		if k, marked := unmark(ops.key(x)); marked && k == key {
			return true
		}
	}
	return false
}

func addedIn[T comparable](s []T, key string, ops listOps[T]) bool {
	var zero T
	for _, x := range s {
		if x != zero && ops.key(x) == key {
			return true
		}
	}
	return false
}

// namespaceAdded reports whether in adds (not removes) the namespace key.
func namespaceAdded(in []*nriv1beta1.LinuxNamespace, key string) bool {
	for _, n := range in {
		if n != nil && n.Type == key {
			return true
		}
	}
	return false
}
