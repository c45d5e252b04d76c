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
// class, rdt class, pids.
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

// mergeOptional handles one optional (wrapper) resource field: it claims
// the field, writes the value into the merged resources and the mirror
// reply, and records the change.
func mergeOptional[T any](m *resMerge, field nriv1beta1.Field, v *T, set func(*nriv1beta1.LinuxResources, *T), render func(*T) string) (bool, error) {
	if v == nil {
		return false, nil
	}
	w, err := m.claim(field)
	if !w {
		return false, err
	}
	m.touch()
	set(m.dst, v)
	if r := m.res(); r != nil {
		set(r, v)
	}
	if m.rec.on() {
		m.note(field, "", render(v))
	}
	return true, nil
}

// i64 handles one optional int64 memory or cpu field.
func (m *resMerge) i64(field nriv1beta1.Field, v *wrapperspb.Int64Value, set func(*nriv1beta1.LinuxResources, *wrapperspb.Int64Value)) (bool, error) {
	return mergeOptional(m, field, v, set, i64)
}

// u64 handles one optional uint64 memory or cpu field.
func (m *resMerge) u64(field nriv1beta1.Field, v *wrapperspb.UInt64Value, set func(*nriv1beta1.LinuxResources, *wrapperspb.UInt64Value)) (bool, error) {
	return mergeOptional(m, field, v, set, u64)
}

// bool handles one optional bool memory field.
func (m *resMerge) bool(field nriv1beta1.Field, v *wrapperspb.BoolValue, set func(*nriv1beta1.LinuxResources, *wrapperspb.BoolValue)) (bool, error) {
	return mergeOptional(m, field, v, set, bln)
}

// str handles one optional string field (blockio and RDT class).
func (m *resMerge) str(field nriv1beta1.Field, v *wrapperspb.StringValue, set func(*nriv1beta1.LinuxResources, *wrapperspb.StringValue)) (bool, error) {
	return mergeOptional(m, field, v, set, str)
}

func (m *resMerge) cpuset(field nriv1beta1.Field, v string, set func(*nriv1beta1.LinuxResources, string)) (bool, error) {
	if v == "" {
		return false, nil
	}
	w, err := m.claim(field)
	if !w {
		return false, err
	}
	m.touch()
	set(m.dst, v)
	if r := m.res(); r != nil {
		set(r, v)
	}
	if m.rec.on() {
		m.note(field, "", v)
	}
	return true, nil
}

// run merges src. It reports whether anything was written.
func (m *resMerge) run(src *nriv1beta1.LinuxResources) (bool, error) {
	if src == nil {
		return false, nil
	}
	var changed bool
	step := func(w bool, err error) error {
		changed = changed || w
		return err
	}

	if mem := src.Memory; mem != nil {
		if err := step(m.i64(nriv1beta1.Field_FIELD_MEM_LIMIT, mem.Limit, func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { memOf(r).Limit = v })); err != nil {
			return changed, err
		}
		if err := step(m.i64(nriv1beta1.Field_FIELD_MEM_RESERVATION, mem.Reservation, func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { memOf(r).Reservation = v })); err != nil {
			return changed, err
		}
		if err := step(m.i64(nriv1beta1.Field_FIELD_MEM_SWAP_LIMIT, mem.Swap, func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { memOf(r).Swap = v })); err != nil {
			return changed, err
		}
		if err := step(m.i64(nriv1beta1.Field_FIELD_MEM_KERNEL_LIMIT, mem.Kernel, func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { memOf(r).Kernel = v })); err != nil {
			return changed, err
		}
		if err := step(m.i64(nriv1beta1.Field_FIELD_MEM_TCP_LIMIT, mem.KernelTcp, func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { memOf(r).KernelTcp = v })); err != nil {
			return changed, err
		}
		if err := step(m.u64(nriv1beta1.Field_FIELD_MEM_SWAPPINESS, mem.Swappiness, func(r *nriv1beta1.LinuxResources, v *wrapperspb.UInt64Value) { memOf(r).Swappiness = v })); err != nil {
			return changed, err
		}
		if err := step(m.bool(nriv1beta1.Field_FIELD_MEM_DISABLE_OOM_KILLER, mem.DisableOomKiller, func(r *nriv1beta1.LinuxResources, v *wrapperspb.BoolValue) { memOf(r).DisableOomKiller = v })); err != nil {
			return changed, err
		}
		if err := step(m.bool(nriv1beta1.Field_FIELD_MEM_USE_HIERARCHY, mem.UseHierarchy, func(r *nriv1beta1.LinuxResources, v *wrapperspb.BoolValue) { memOf(r).UseHierarchy = v })); err != nil {
			return changed, err
		}
	}

	if cpu := src.Cpu; cpu != nil {
		if err := step(m.u64(nriv1beta1.Field_FIELD_CPU_SHARES, cpu.Shares, func(r *nriv1beta1.LinuxResources, v *wrapperspb.UInt64Value) { cpuOf(r).Shares = v })); err != nil {
			return changed, err
		}
		if err := step(m.i64(nriv1beta1.Field_FIELD_CPU_QUOTA, cpu.Quota, func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { cpuOf(r).Quota = v })); err != nil {
			return changed, err
		}
		if err := step(m.u64(nriv1beta1.Field_FIELD_CPU_PERIOD, cpu.Period, func(r *nriv1beta1.LinuxResources, v *wrapperspb.UInt64Value) { cpuOf(r).Period = v })); err != nil {
			return changed, err
		}
		if err := step(m.i64(nriv1beta1.Field_FIELD_CPU_REALTIME_RUNTIME, cpu.RealtimeRuntime, func(r *nriv1beta1.LinuxResources, v *wrapperspb.Int64Value) { cpuOf(r).RealtimeRuntime = v })); err != nil {
			return changed, err
		}
		if err := step(m.u64(nriv1beta1.Field_FIELD_CPU_REALTIME_PERIOD, cpu.RealtimePeriod, func(r *nriv1beta1.LinuxResources, v *wrapperspb.UInt64Value) { cpuOf(r).RealtimePeriod = v })); err != nil {
			return changed, err
		}
		if err := step(m.cpuset(nriv1beta1.Field_FIELD_CPU_SET_CPUS, cpu.Cpus, func(r *nriv1beta1.LinuxResources, v string) { cpuOf(r).Cpus = v })); err != nil {
			return changed, err
		}
		if err := step(m.cpuset(nriv1beta1.Field_FIELD_CPU_SET_MEMS, cpu.Mems, func(r *nriv1beta1.LinuxResources, v string) { cpuOf(r).Mems = v })); err != nil {
			return changed, err
		}
	}

	for i, l := range src.HugepageLimits {
		if l == nil {
			continue
		}
		if m.mode == resCheck {
			// Within one update a page size given twice is the same plugin
			// claiming twice.
			for _, e := range src.HugepageLimits[:i] {
				if e != nil && e.PageSize == l.PageSize {
					return false, &ConflictError{Field: nriv1beta1.Field_FIELD_HUGEPAGE_LIMITS, Key: l.PageSize, Plugin: m.plugin, Other: m.plugin}
				}
			}
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

	if m.mode == resAdjust {
		for _, d := range src.Devices {
			if d == nil {
				continue
			}
			m.touch()
			m.dst.Devices = append(m.dst.Devices, d)
			r := m.res()
			if r != nil {
				r.Devices = append(r.Devices, d)
			}
			changed = true
			if m.rec.on() {
				m.note(nriv1beta1.Field_FIELD_UNSPECIFIED, KeyDeviceCgroupRule, renderDeviceRule(d))
			}
		}
	}

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

	if err := step(m.str(nriv1beta1.Field_FIELD_BLOCKIO_CLASS, src.BlockioClass, func(r *nriv1beta1.LinuxResources, v *wrapperspb.StringValue) { r.BlockioClass = v })); err != nil {
		return changed, err
	}
	if err := step(m.str(nriv1beta1.Field_FIELD_RDT_CLASS, src.RdtClass, func(r *nriv1beta1.LinuxResources, v *wrapperspb.StringValue) { r.RdtClass = v })); err != nil {
		return changed, err
	}

	if p := src.Pids; p != nil {
		w, err := m.claim(nriv1beta1.Field_FIELD_PIDS_LIMIT)
		if err != nil {
			return changed, err
		}
		if w {
			m.touch()
			m.dst.Pids = p
			if r := m.res(); r != nil {
				r.Pids = p
			}
			changed = true
			if m.rec.on() {
				m.note(nriv1beta1.Field_FIELD_PIDS_LIMIT, "", strconv.FormatInt(p.Limit, 10))
			}
		}
	}

	return changed, nil
}
