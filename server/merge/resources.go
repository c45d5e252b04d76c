package merge

import (
	"strconv"

	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// resMode selects what resMerge.run does.
type resMode uint8

const (
	// resCheck only checks the claims for conflicts and changes nothing.
	resCheck resMode = iota
	// resAdjust claims and writes; device cgroup rules are appended
	// (CreateContainer adjustments).
	resAdjust
	// resUpdate claims and writes; device cgroup rules are ignored, as in
	// classic NRI (container updates).
	resUpdate
)

// resMerge merges the LinuxResources of one plugin into dst, claiming every
// field it sets for container id. The claim order, hence the conflict
// reported first, is classic NRI's: memory, cpu, hugepages, unified, blockio
// class, rdt class, pids (see resFields).
type resMerge struct {
	mode   resMode
	own    *fieldOwners // owners of container id; may be nil in resCheck mode
	table  *ownerTable  // if own is nil, where to create it on the first claim
	plugin string
	id     string
	dst    *nriv1beta1.LinuxResources // written in place
	mirror *Create                    // if set, writes also go to its reply
	rec    recorder
}

// claim checks (resCheck) or claims a simple field. It reports whether the
// value is to be written.
func (m *resMerge) claim(field nriv1beta1.Field) (bool, error) {
	if m.mode == resCheck {
		return false, m.own.checkSimple(field, m.plugin)
	}
	m.owners()
	if err := m.own.claimSimple(field, m.plugin); err != nil {
		return false, err
	}
	return true, nil
}

// claimEntry checks or claims an entry of a compound field.
func (m *resMerge) claimEntry(field nriv1beta1.Field, key string) (bool, error) {
	if m.mode == resCheck {
		return false, m.own.checkCompound(field, key, m.plugin)
	}
	m.owners()
	if err := m.own.claimCompound(field, key, m.plugin); err != nil {
		return false, err
	}
	return true, nil
}

// owners makes sure m.own is set before a claim.
func (m *resMerge) owners() {
	if m.own == nil {
		m.own = m.table.of(m.id)
	}
}

func (m *resMerge) note(field nriv1beta1.Field, key, value string) {
	m.rec.add(m.id, field, key, value, false)
}

func memOf(r *nriv1beta1.LinuxResources) *nriv1beta1.LinuxMemory {
	if r.Memory == nil {
		r.Memory = &nriv1beta1.LinuxMemory{}
	}
	return r.Memory
}

func cpuOf(r *nriv1beta1.LinuxResources) *nriv1beta1.LinuxCPU {
	if r.Cpu == nil {
		r.Cpu = &nriv1beta1.LinuxCPU{}
	}
	return r.Cpu
}

// touch is called before anything is written to dst: when mirroring, dst is
// the request container's resources.
func (m *resMerge) touch() {
	if m.mirror != nil {
		m.mirror.mut()
	}
}

// res returns the mirror's reply resources, nil when not mirroring.
func (m *resMerge) res() *nriv1beta1.LinuxResources {
	if m.mirror != nil {
		return m.mirror.replyResources()
	}
	return nil
}

// resField is one entry of resFields: a simple field, whose functions are
// built by scalar, or a group of entries merged by its own method (then
// only group is set).
//
// The functions take the resources only, never the resMerge: an indirect
// call taking it would move it to the heap.
type resField struct {
	group  resGroup
	field  nriv1beta1.Field
	isSet  func(src *nriv1beta1.LinuxResources) bool // whether src sets the field
	copy   func(dst, src *nriv1beta1.LinuxResources) // sets the field of dst to src's
	render func(src *nriv1beta1.LinuxResources) string
}

// resGroup tells what a resField is.
type resGroup uint8

const (
	resSimple      resGroup = iota // a simple field
	resHugepages                   // hugepage limits (resMerge.hugepages)
	resDeviceRules                 // device cgroup rules (resMerge.deviceRules)
	resUnified                     // unified cgroup entries (resMerge.unified)
)

// resFields are the fields merged by run, in classic NRI's claim order
// (which decides the conflict reported first).
var resFields = [...]resField{
	scalar(nriv1beta1.Field_FIELD_MEM_LIMIT,
		func(r *nriv1beta1.LinuxResources) *wrapperspb.Int64Value { return r.GetMemory().GetLimit() },
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { memOf(r).Limit = v }, i64),
	scalar(nriv1beta1.Field_FIELD_MEM_RESERVATION,
		func(r *nriv1beta1.LinuxResources) *wrapperspb.Int64Value { return r.GetMemory().GetReservation() },
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { memOf(r).Reservation = v }, i64),
	scalar(nriv1beta1.Field_FIELD_MEM_SWAP_LIMIT,
		func(r *nriv1beta1.LinuxResources) *wrapperspb.Int64Value { return r.GetMemory().GetSwap() },
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { memOf(r).Swap = v }, i64),
	scalar(nriv1beta1.Field_FIELD_MEM_KERNEL_LIMIT,
		func(r *nriv1beta1.LinuxResources) *wrapperspb.Int64Value { return r.GetMemory().GetKernel() },
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { memOf(r).Kernel = v }, i64),
	scalar(nriv1beta1.Field_FIELD_MEM_TCP_LIMIT,
		func(r *nriv1beta1.LinuxResources) *wrapperspb.Int64Value { return r.GetMemory().GetKernelTcp() },
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { memOf(r).KernelTcp = v }, i64),
	scalar(nriv1beta1.Field_FIELD_MEM_SWAPPINESS,
		func(r *nriv1beta1.LinuxResources) *wrapperspb.UInt64Value { return r.GetMemory().GetSwappiness() },
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.UInt64Value) { memOf(r).Swappiness = v }, u64),
	scalar(nriv1beta1.Field_FIELD_MEM_DISABLE_OOM_KILLER,
		func(r *nriv1beta1.LinuxResources) *wrapperspb.BoolValue { return r.GetMemory().GetDisableOomKiller() },
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.BoolValue) { memOf(r).DisableOomKiller = v }, bln),
	scalar(nriv1beta1.Field_FIELD_MEM_USE_HIERARCHY,
		func(r *nriv1beta1.LinuxResources) *wrapperspb.BoolValue { return r.GetMemory().GetUseHierarchy() },
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.BoolValue) { memOf(r).UseHierarchy = v }, bln),

	scalar(nriv1beta1.Field_FIELD_CPU_SHARES,
		func(r *nriv1beta1.LinuxResources) *wrapperspb.UInt64Value { return r.GetCpu().GetShares() },
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.UInt64Value) { cpuOf(r).Shares = v }, u64),
	scalar(nriv1beta1.Field_FIELD_CPU_QUOTA,
		func(r *nriv1beta1.LinuxResources) *wrapperspb.Int64Value { return r.GetCpu().GetQuota() },
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { cpuOf(r).Quota = v }, i64),
	scalar(nriv1beta1.Field_FIELD_CPU_PERIOD,
		func(r *nriv1beta1.LinuxResources) *wrapperspb.UInt64Value { return r.GetCpu().GetPeriod() },
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.UInt64Value) { cpuOf(r).Period = v }, u64),
	scalar(nriv1beta1.Field_FIELD_CPU_REALTIME_RUNTIME,
		func(r *nriv1beta1.LinuxResources) *wrapperspb.Int64Value { return r.GetCpu().GetRealtimeRuntime() },
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { cpuOf(r).RealtimeRuntime = v }, i64),
	scalar(nriv1beta1.Field_FIELD_CPU_REALTIME_PERIOD,
		func(r *nriv1beta1.LinuxResources) *wrapperspb.UInt64Value { return r.GetCpu().GetRealtimePeriod() },
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.UInt64Value) { cpuOf(r).RealtimePeriod = v }, u64),
	scalar(nriv1beta1.Field_FIELD_CPU_SET_CPUS,
		func(r *nriv1beta1.LinuxResources) string { return r.GetCpu().GetCpus() },
		func(r *nriv1beta1.LinuxResources, v string) { cpuOf(r).Cpus = v }, renderString),
	scalar(nriv1beta1.Field_FIELD_CPU_SET_MEMS,
		func(r *nriv1beta1.LinuxResources) string { return r.GetCpu().GetMems() },
		func(r *nriv1beta1.LinuxResources, v string) { cpuOf(r).Mems = v }, renderString),

	{group: resHugepages},
	{group: resDeviceRules},
	{group: resUnified},

	scalar(nriv1beta1.Field_FIELD_BLOCKIO_CLASS, (*nriv1beta1.LinuxResources).GetBlockioClass,
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.StringValue) { r.BlockioClass = v }, str),
	scalar(nriv1beta1.Field_FIELD_RDT_CLASS, (*nriv1beta1.LinuxResources).GetRdtClass,
		func(r *nriv1beta1.LinuxResources, v *wrapperspb.StringValue) { r.RdtClass = v }, str),
	scalar(nriv1beta1.Field_FIELD_PIDS_LIMIT, (*nriv1beta1.LinuxResources).GetPids,
		func(r *nriv1beta1.LinuxResources, v *nriv1beta1.LinuxPids) { r.Pids = v }, renderPids),
}

// scalar describes a simple field of type V: an optional message (nil when
// unset) or a string ("" when unset). get must not modify the resources it
// reads; set creates the memory or cpu part if needed.
func scalar[V comparable](field nriv1beta1.Field, get func(*nriv1beta1.LinuxResources) V,
	set func(*nriv1beta1.LinuxResources, V), render func(V) string) resField {
	var unset V
	return resField{
		group:  resSimple,
		field:  field,
		isSet:  func(src *nriv1beta1.LinuxResources) bool { return get(src) != unset },
		copy:   func(dst, src *nriv1beta1.LinuxResources) { set(dst, get(src)) },
		render: func(src *nriv1beta1.LinuxResources) string { return render(get(src)) },
	}
}

// run merges src. It reports whether anything was written.
func (m *resMerge) run(src *nriv1beta1.LinuxResources) (bool, error) {
	if src == nil {
		return false, nil
	}
	var changed bool
	for i := range resFields {
		w, err := m.merge(&resFields[i], src)
		changed = changed || w
		if err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// merge merges one field, or group of entries, of src. It reports whether
// anything was written.
func (m *resMerge) merge(f *resField, src *nriv1beta1.LinuxResources) (bool, error) {
	switch f.group {
	case resHugepages:
		return m.hugepages(src)
	case resDeviceRules:
		return m.deviceRules(src)
	case resUnified:
		return m.unified(src)
	}
	if !f.isSet(src) {
		return false, nil
	}
	w, err := m.claim(f.field)
	if !w {
		return false, err
	}
	m.touch()
	f.copy(m.dst, src)
	if r := m.res(); r != nil {
		f.copy(r, src)
	}
	if m.rec.on() {
		m.note(f.field, "", f.render(src))
	}
	return true, nil
}

// hugepages merges the hugepage limits, keyed by page size.
func (m *resMerge) hugepages(src *nriv1beta1.LinuxResources) (bool, error) {
	var changed bool
	for i, l := range src.HugepageLimits {
		if l == nil {
			continue
		}
		// Within one update a page size given twice is the same plugin
		// claiming twice.
		if m.mode == resCheck && hasPageSize(src.HugepageLimits[:i], l.PageSize) {
			return false, &ConflictError{Field: nriv1beta1.Field_FIELD_HUGEPAGE_LIMITS, Key: l.PageSize, Plugin: m.plugin, Other: m.plugin}
		}
		w, err := m.claimEntry(nriv1beta1.Field_FIELD_HUGEPAGE_LIMITS, l.PageSize)
		if err != nil {
			return changed, err
		}
		if !w {
			continue
		}
		m.touch()
		m.dst.HugepageLimits = append(m.dst.HugepageLimits, l)
		if r := m.res(); r != nil {
			r.HugepageLimits = append(r.HugepageLimits, l)
		}
		changed = true
		if m.rec.on() {
			m.note(nriv1beta1.Field_FIELD_HUGEPAGE_LIMITS, l.PageSize, strconv.FormatUint(l.Limit, 10))
		}
	}
	return changed, nil
}

// hasPageSize reports whether ls holds a limit for size.
func hasPageSize(ls []*nriv1beta1.HugepageLimit, size string) bool {
	for _, e := range ls {
		if e != nil && e.PageSize == size {
			return true
		}
	}
	return false
}

// deviceRules appends the device cgroup rules, in resAdjust mode only. They
// are not claimed: they never conflict.
func (m *resMerge) deviceRules(src *nriv1beta1.LinuxResources) (bool, error) {
	if m.mode != resAdjust {
		return false, nil
	}
	var changed bool
	for _, d := range src.Devices {
		if d == nil {
			continue
		}
		m.touch()
		m.dst.Devices = append(m.dst.Devices, d)
		if r := m.res(); r != nil {
			r.Devices = append(r.Devices, d)
		}
		changed = true
		if m.rec.on() {
			m.note(nriv1beta1.Field_FIELD_UNSPECIFIED, KeyDeviceCgroupRule, renderDeviceRule(d))
		}
	}
	return changed, nil
}

// unified merges the unified cgroup (v2) entries, keyed by name.
func (m *resMerge) unified(src *nriv1beta1.LinuxResources) (bool, error) {
	var changed bool
	for k, v := range src.Unified {
		w, err := m.claimEntry(nriv1beta1.Field_FIELD_CGROUPS_UNIFIED, k)
		if err != nil {
			return changed, err
		}
		if !w {
			continue
		}
		m.touch()
		if m.dst.Unified == nil {
			m.dst.Unified = make(map[string]string, len(src.Unified))
		}
		m.dst.Unified[k] = v
		if r := m.res(); r != nil {
			if r.Unified == nil {
				r.Unified = make(map[string]string, len(src.Unified))
			}
			r.Unified[k] = v
		}
		changed = true
		if m.rec.on() {
			m.note(nriv1beta1.Field_FIELD_CGROUPS_UNIFIED, k, v)
		}
	}
	return changed, nil
}
