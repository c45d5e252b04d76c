package merge

import (
	"fmt"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// numFields is one past the highest Field number.
const numFields = int(nriv1beta1.Field_FIELD_MEMORY_POLICY) + 1

// classicFieldNames are the v1alpha1 names of the Field values, which classic
// NRI prints in conflict errors ("MemLimit", "Mounts", ...).
var classicFieldNames = [numFields]string{
	"None", "Annotations", "Mounts", "OciHooks", "Devices", "CdiDevices", "Env", "Args",
	"MemLimit", "MemReservation", "MemSwapLimit", "MemKernelLimit", "MemTCPLimit",
	"MemSwappiness", "MemDisableOomKiller", "MemUseHierarchy",
	"CPUShares", "CPUQuota", "CPUPeriod", "CPURealtimeRuntime", "CPURealtimePeriod",
	"CPUSetCPUs", "CPUSetMems", "PidsLimit", "HugepageLimits", "BlockioClass", "RdtClass",
	"CgroupsUnified", "CgroupsPath", "OomScoreAdj", "Rlimits", "IoPriority", "SeccompPolicy",
	"Namespace", "Sysctl", "LinuxNetDevices", "LinuxSched", "RdtClosID", "RdtSchemata",
	"RdtEnableMonitoring", "MemoryPolicy",
}

// ClassicFieldName returns the name classic NRI (v1alpha1) uses for f in
// conflict errors, for example "MemLimit" for FIELD_MEM_LIMIT. Unknown values
// are rendered as their number.
func ClassicFieldName(f nriv1beta1.Field) string {
	if f >= 0 && int(f) < numFields {
		return classicFieldNames[f]
	}
	return fmt.Sprint(int32(f))
}

// ConflictError reports that two plugins (or one plugin twice) tried to set
// the same field or entry of a container. Its message is exactly the one of
// classic NRI: `plugins "10-b" and "00-a" both tried to set Mounts /x`. For a
// simple field Key is empty and the message ends with a space, as in classic.
type ConflictError struct {
	// Field is the contested field.
	Field nriv1beta1.Field
	// Key is the contested entry of a compound field (annotation key, mount
	// destination, ...), empty for a simple field.
	Key string
	// Plugin is the full name ("NN-name") of the plugin whose claim failed.
	Plugin string
	// Other is the full name of the plugin that owned the field: the earlier
	// claimer, or the plugin that removed the entry.
	Other string
}

// Error returns the classic conflict message.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("plugins %q and %q both tried to set %s %s",
		e.Plugin, e.Other, ClassicFieldName(e.Field), e.Key)
}

// SelfUpdateError reports that a plugin asked, in its CreateContainer
// response, for an update of the container being created. Its message is
// exactly the one of classic NRI.
type SelfUpdateError struct {
	// Plugin is the full name ("NN-name") of the plugin.
	Plugin string
	// ContainerID is the ID of the container being created.
	ContainerID string
}

// Error returns the classic message.
func (e *SelfUpdateError) Error() string {
	return fmt.Sprintf("plugin %q asked update of %q during creation", e.Plugin, e.ContainerID)
}

// compoundKey identifies one entry of a compound field.
type compoundKey struct {
	field nriv1beta1.Field
	key   string
}

// fieldOwners are the owners of the fields of one container. An owner is a
// plugin's full name, a removal marker "-NN-name", or, for hooks, a
// comma-separated list of full names. "" means unowned.
type fieldOwners struct {
	simple   [numFields]string
	compound map[compoundKey]string
}

// unmarkOwner splits a removal-marker owner "-plugin" into the plugin.
func unmarkOwner(owner string) (string, bool) {
	if len(owner) > 0 && owner[0] == '-' {
		return owner[1:], true
	}
	return owner, false
}

// conflict checks whether plugin may claim an entry currently owned by
// owner: only an unowned entry, or one the same plugin removed, may be
// claimed.
func conflict(field nriv1beta1.Field, key, owner, plugin string) error {
	if owner == "" {
		return nil
	}
	other, marked := unmarkOwner(owner)
	if marked && other == plugin {
		return nil
	}
	return &ConflictError{Field: field, Key: key, Plugin: plugin, Other: other}
}

// checkSimple reports whether plugin could claim the simple field.
func (f *fieldOwners) checkSimple(field nriv1beta1.Field, plugin string) error {
	if f == nil {
		return nil
	}
	return conflict(field, "", f.simple[field], plugin)
}

// checkCompound reports whether plugin could claim the compound entry.
func (f *fieldOwners) checkCompound(field nriv1beta1.Field, key, plugin string) error {
	if f == nil || f.compound == nil {
		return nil
	}
	return conflict(field, key, f.compound[compoundKey{field, key}], plugin)
}

// claimSimple makes plugin the owner of the simple field, or fails with a
// *ConflictError.
func (f *fieldOwners) claimSimple(field nriv1beta1.Field, plugin string) error {
	if err := conflict(field, "", f.simple[field], plugin); err != nil {
		return err
	}
	f.simple[field] = plugin
	return nil
}

// claimCompound makes plugin the owner of the compound entry, or fails with
// a *ConflictError.
func (f *fieldOwners) claimCompound(field nriv1beta1.Field, key, plugin string) error {
	k := compoundKey{field, key}
	if f.compound == nil {
		f.compound = make(map[compoundKey]string, 4)
	} else if err := conflict(field, key, f.compound[k], plugin); err != nil {
		return err
	}
	f.compound[k] = plugin
	return nil
}

// clearSimple marks the simple field removed by plugin, whoever owned it.
func (f *fieldOwners) clearSimple(field nriv1beta1.Field, plugin string) {
	f.simple[field] = "-" + plugin
}

// clearCompound marks the compound entry removed by plugin, whoever owned
// it.
func (f *fieldOwners) clearCompound(field nriv1beta1.Field, key, plugin string) {
	if f.compound == nil {
		f.compound = make(map[compoundKey]string, 4)
	}
	f.compound[compoundKey{field, key}] = "-" + plugin
}

// accumulate adds plugin to the comma-separated owners of field (hooks).
func (f *fieldOwners) accumulate(field nriv1beta1.Field, plugin string) {
	if old := f.simple[field]; old != "" {
		f.simple[field] = old + "," + plugin
	} else {
		f.simple[field] = plugin
	}
}

// ownerTable holds the field owners of every container touched by one
// event. Events touch few containers, so lookups scan a slice until it grows.
type ownerTable struct {
	ids     []string
	tabs    []*fieldOwners
	index   map[string]*fieldOwners // built once ids grows past linearLimit
	idsBuf  [2]string
	tabsBuf [2]*fieldOwners
}

const linearLimit = 8

// lookup returns the owners of container id, nil if none were recorded.
func (t *ownerTable) lookup(id string) *fieldOwners {
	if t.index != nil {
		return t.index[id]
	}
	for i, x := range t.ids {
		if x == id {
			return t.tabs[i]
		}
	}
	return nil
}

// of returns the owners of container id, creating them if needed.
func (t *ownerTable) of(id string) *fieldOwners {
	if f := t.lookup(id); f != nil {
		return f
	}
	f := &fieldOwners{}
	if t.ids == nil {
		t.ids, t.tabs = t.idsBuf[:0], t.tabsBuf[:0]
	}
	t.ids = append(t.ids, id)
	t.tabs = append(t.tabs, f)
	if t.index != nil {
		t.index[id] = f
	} else if len(t.ids) > linearLimit {
		t.index = make(map[string]*fieldOwners, 2*len(t.ids))
		for i, x := range t.ids {
			t.index[x] = t.tabs[i]
		}
	}
	return f
}

// proto renders the table as the API's OwningPlugins.
func (t *ownerTable) proto() *nriv1beta1.OwningPlugins {
	out := &nriv1beta1.OwningPlugins{}
	if len(t.ids) == 0 {
		return out
	}
	out.Owners = make(map[string]*nriv1beta1.FieldOwners, len(t.ids))
	for i, id := range t.ids {
		f := t.tabs[i]
		fo := &nriv1beta1.FieldOwners{}
		for field, owner := range f.simple {
			if owner == "" {
				continue
			}
			if fo.Simple == nil {
				fo.Simple = make(map[int32]string)
			}
			fo.Simple[int32(field)] = owner
		}
		for k, owner := range f.compound {
			if fo.Compound == nil {
				fo.Compound = make(map[int32]*nriv1beta1.CompoundFieldOwners)
			}
			c := fo.Compound[int32(k.field)]
			if c == nil {
				c = &nriv1beta1.CompoundFieldOwners{Owners: map[string]string{}}
				fo.Compound[int32(k.field)] = c
			}
			c.Owners[k.key] = owner
		}
		out.Owners[id] = fo
	}
	return out
}

// Plugins returns the full names of the plugins involved in the conflict:
// the claimer, then the owner (once if they are the same plugin).
func (e *ConflictError) Plugins() []string {
	if e.Plugin == e.Other {
		return []string{e.Plugin}
	}
	return []string{e.Plugin, e.Other}
}

// Plugins returns the full name of the plugin at fault.
func (e *SelfUpdateError) Plugins() []string {
	return []string{e.Plugin}
}
