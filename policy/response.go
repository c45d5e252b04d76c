package policy

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
	"github.com/nri-grpc/nri-grpc/server/check"
)

// Denied is a plugin response (or unsolicited update) refused by policy:
// it names the refused field and the missing grant.
type Denied struct {
	// Field is the path of the refused field in the response
	// ("adjust.hooks", "update[0]").
	Field string
	// Identity is the identity that lacks the grant.
	Identity string
	// Grant is the missing grant.
	Grant Grant
	// Detail adds context, for example the container of an update.
	Detail string
}

// FieldPath is Field: the server names it in the refusal's status details.
func (d *Denied) FieldPath() string { return d.Field }

// Error renders `adjust.hooks: identity "uid:1000" lacks the oci_hooks grant`.
func (d *Denied) Error() string {
	msg := fmt.Sprintf("%s: identity %q lacks the %s grant", d.Field, d.Identity, d.Grant)
	if d.Grant == GrantAll {
		msg = fmt.Sprintf("%s: identity %q may not set this field: nrid's policy does not classify it, so only the socket owner may", d.Field, d.Identity)
	}
	if d.Detail != "" {
		msg += " (" + d.Detail + ")"
	}
	return msg
}

// grantOfField classifies the fields of ContainerAdjustment and
// LinuxContainerAdjustment. "" recurses into a message (linux). A field
// missing here (added to the protocol later) needs GrantAll, so an
// unclassified field can never slip through under a lesser grant; the
// package test fails until it is classified.
var grantOfField = map[protoreflect.FullName]Grant{
	"nri.v1beta1.ContainerAdjustment.annotations": GrantAdjust,
	"nri.v1beta1.ContainerAdjustment.mounts":      GrantMounts,
	"nri.v1beta1.ContainerAdjustment.env":         GrantAdjust,
	"nri.v1beta1.ContainerAdjustment.hooks":       GrantOCIHooks,
	"nri.v1beta1.ContainerAdjustment.linux":       0, // recurse
	"nri.v1beta1.ContainerAdjustment.rlimits":     GrantAdjust,
	"nri.v1beta1.ContainerAdjustment.cdi_devices": GrantDevices,
	"nri.v1beta1.ContainerAdjustment.args":        GrantArgs,

	"nri.v1beta1.LinuxContainerAdjustment.devices":        GrantDevices,
	"nri.v1beta1.LinuxContainerAdjustment.resources":      GrantAdjust, // its devices: GrantDevices too
	"nri.v1beta1.LinuxContainerAdjustment.cgroups_path":   GrantCgroupsPath,
	"nri.v1beta1.LinuxContainerAdjustment.oom_score_adj":  GrantAdjust,
	"nri.v1beta1.LinuxContainerAdjustment.io_priority":    GrantAdjust,
	"nri.v1beta1.LinuxContainerAdjustment.seccomp_policy": GrantSeccomp,
	"nri.v1beta1.LinuxContainerAdjustment.namespaces":     GrantNamespaces,
	"nri.v1beta1.LinuxContainerAdjustment.sysctl":         GrantAdjust | GrantHostSysctls, // per key: checkSysctl
	"nri.v1beta1.LinuxContainerAdjustment.net_devices":    GrantDevices,
	"nri.v1beta1.LinuxContainerAdjustment.scheduler":      GrantAdjust,
	"nri.v1beta1.LinuxContainerAdjustment.rdt":            GrantAdjust,
	"nri.v1beta1.LinuxContainerAdjustment.memory_policy":  GrantAdjust,
}

// sysctlField needs a grant per key (checkSysctl).
const sysctlField protoreflect.FullName = "nri.v1beta1.LinuxContainerAdjustment.sysctl"

// emptyMeansNothing are message fields that change nothing when present
// but empty (lists of things to add); other message fields replace a whole
// value and count when present.
var emptyMeansNothing = map[protoreflect.FullName]bool{
	"nri.v1beta1.ContainerAdjustment.hooks":          true,
	"nri.v1beta1.ContainerAdjustment.linux":          true,
	"nri.v1beta1.LinuxContainerAdjustment.resources": true,
}

// AuthorizeResponse implements server.Authorizer: every field the response
// sets must be granted to identity for plugin full. The first refused field,
// in field order, is reported as a *Denied.
func (p *Policy) AuthorizeResponse(identity, full string, _ nriv1beta1.Event, req, rsp proto.Message) error {
	g := p.grantsFor(identity, full)
	if g.owner {
		return nil
	}
	switch r := rsp.(type) {
	case *nriv1beta1.CreateContainerResponse:
		if err := checkAdjustment(identity, g.grant, "adjust", r.GetAdjust()); err != nil {
			return err
		}
		return checkUpdates(identity, g.grant, r.GetUpdate(), r.GetEvict())
	case *nriv1beta1.UpdateContainerResponse:
		// An update of the target container alters the update being made:
		// it needs the adjust grant (and the resource grants). Updates of
		// other containers need update_others.
		target := ""
		if u, ok := req.(*nriv1beta1.UpdateContainerRequest); ok {
			target = u.GetContainer().GetId()
		}
		var others []*nriv1beta1.ContainerUpdate
		for i, u := range r.GetUpdate() {
			if target != "" && u.GetContainerId() == target {
				if g.grant&GrantAdjust == 0 {
					return &Denied{Field: fmt.Sprintf("update[%d]", i), Identity: identity, Grant: GrantAdjust,
						Detail: fmt.Sprintf("the target container %q", target)}
				}
				if err := checkResources(identity, g.grant, fmt.Sprintf("update[%d].linux.resources", i), u.GetLinux().GetResources()); err != nil {
					return err
				}
				continue
			}
			others = append(others, u)
		}
		return checkUpdates(identity, g.grant, others, r.GetEvict())
	case *nriv1beta1.StopContainerResponse:
		return checkUpdates(identity, g.grant, r.GetUpdate(), r.GetEvict())
	case *nriv1beta1.SynchronizeResponse:
		return checkUpdates(identity, g.grant, r.GetUpdate(), r.GetEvict())
	case *nriv1beta1.UpdateContainersRequest:
		return checkUpdates(identity, g.grant, r.GetUpdate(), r.GetEvict())
	}
	return nil
}

// AuthorizeUpdates checks unsolicited updates and evictions
// (RuntimeService.UpdateContainers, or updates returned by Synchronize) of
// plugin full against identity's grants.
func (p *Policy) AuthorizeUpdates(identity, full string, updates []*nriv1beta1.ContainerUpdate, evictions []*nriv1beta1.ContainerEviction) error {
	g := p.grantsFor(identity, full)
	if g.owner {
		return nil
	}
	return checkUpdates(identity, g.grant, updates, evictions)
}

func checkUpdates(identity string, have Grant, updates []*nriv1beta1.ContainerUpdate, evictions []*nriv1beta1.ContainerEviction) error {
	if len(updates) > 0 && have&GrantUpdateOthers == 0 {
		return &Denied{Field: "update[0]", Identity: identity, Grant: GrantUpdateOthers,
			Detail: fmt.Sprintf("container %q", updates[0].GetContainerId())}
	}
	for i, u := range updates {
		field := fmt.Sprintf("update[%d].linux.resources", i)
		if err := checkResources(identity, have, field, u.GetLinux().GetResources()); err != nil {
			return err
		}
	}
	if len(evictions) > 0 && have&GrantEvictOthers == 0 {
		return &Denied{Field: "evict[0]", Identity: identity, Grant: GrantEvictOthers,
			Detail: fmt.Sprintf("container %q", evictions[0].GetContainerId())}
	}
	return nil
}

// checkAdjustment checks the set fields of an adjustment message.
func checkAdjustment(identity string, have Grant, path string, m proto.Message) error {
	if m == nil {
		return nil
	}
	r := m.ProtoReflect()
	if !r.IsValid() {
		return nil
	}
	fields := r.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !r.Has(fd) {
			continue
		}
		name := fd.FullName()
		field := path + "." + string(fd.Name())
		if emptyMeansNothing[name] && !populated(r.Get(fd).Message()) {
			continue
		}
		if name == sysctlField {
			if err := checkSysctl(identity, have, field, m.(*nriv1beta1.LinuxContainerAdjustment).GetSysctl()); err != nil {
				return err
			}
			continue
		}
		need, known := grantOfField[name]
		if !known {
			need = GrantAll
		}
		if known && need == 0 {
			if err := checkAdjustment(identity, have, field, r.Get(fd).Message().Interface()); err != nil {
				return err
			}
			continue
		}
		if have&need != need {
			return &Denied{Field: field, Identity: identity, Grant: need}
		}
		if name == "nri.v1beta1.LinuxContainerAdjustment.resources" {
			if err := checkResources(identity, have, field, m.(*nriv1beta1.LinuxContainerAdjustment).GetResources()); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkResources applies the devices grant to device cgroup rules: allowing
// a container access to a device node is as strong as adding the device.
func checkResources(identity string, have Grant, path string, r *nriv1beta1.LinuxResources) error {
	if len(r.GetDevices()) > 0 && have&GrantDevices == 0 {
		return &Denied{Field: path + ".devices", Identity: identity, Grant: GrantDevices}
	}
	return nil
}

// checkSysctl grants sysctls key by key. The ones the kernel namespaces
// (net.*, the IPC and UTS sets) change only the container's namespaces and
// need adjust. Every other sysctl changes the host, for every container and
// process on it (kernel.core_pattern names a program the kernel runs as
// root), so setting or removing one needs host_sysctls, which is
// root-equivalent. The refused key reported is the first in sorted order,
// so the same response is always refused the same way.
func checkSysctl(identity string, have Grant, path string, sysctl map[string]string) error {
	var refused string
	var need Grant
	for k := range sysctl {
		g := GrantHostSysctls
		if check.NamespacedSysctl(strings.TrimPrefix(k, "-")) {
			g = GrantAdjust
		}
		if have&g == 0 && (need == 0 || k < refused) {
			refused, need = k, g
		}
	}
	if need == 0 {
		return nil
	}
	d := &Denied{Field: fmt.Sprintf("%s[%s]", path, untrusted.Quote(refused)), Identity: identity, Grant: need}
	if need == GrantHostSysctls {
		d.Detail = "the kernel does not namespace this sysctl: it changes the host"
	}
	return d
}

// populated reports whether a message sets any field.
func populated(m protoreflect.Message) bool {
	found := false
	m.Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool {
		found = true
		return false
	})
	return found
}
