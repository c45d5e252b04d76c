package merge_test

import (
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

type (
	createRsp = *nriv1beta1.CreateContainerResponse
	updateRsp = *nriv1beta1.UpdateContainerResponse
	stopRsp   = *nriv1beta1.StopContainerResponse
)

var testPod = fixture.Pod(1)

// baseContainer is the fixture container, with a device, a sysctl and a
// net device of the runtime's own, for removal cases.
func baseContainer() *nriv1beta1.Container {
	c := fixture.Container(1, 0)
	c.Linux.Devices = []*nriv1beta1.LinuxDevice{{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 229}}
	c.Linux.Sysctl = map[string]string{"net.ipv4.ip_forward": "1"}
	c.Linux.NetDevices = map[string]*nriv1beta1.LinuxNetDevice{"eth9": {Name: "net9"}}
	return c
}

var ctrID = fixture.Container(1, 0).Id

func cp(name string, rsp createRsp) plug[createRsp] { return plug[createRsp]{name, rsp} }
func up(name string, rsp updateRsp) plug[updateRsp] { return plug[updateRsp]{name, rsp} }
func sp(name string, rsp stopRsp) plug[stopRsp]     { return plug[stopRsp]{name, rsp} }

// adj builds a CreateContainer response with an adjustment.
func adj(fs ...func(a *nriv1beta1.ContainerAdjustment)) createRsp {
	a := &nriv1beta1.ContainerAdjustment{}
	for _, f := range fs {
		f(a)
	}
	return &nriv1beta1.CreateContainerResponse{Adjust: a}
}

func lin(a *nriv1beta1.ContainerAdjustment) *nriv1beta1.LinuxContainerAdjustment {
	if a.Linux == nil {
		a.Linux = &nriv1beta1.LinuxContainerAdjustment{}
	}
	return a.Linux
}

func res(a *nriv1beta1.ContainerAdjustment) *nriv1beta1.LinuxResources {
	l := lin(a)
	if l.Resources == nil {
		l.Resources = &nriv1beta1.LinuxResources{}
	}
	return l.Resources
}

func mem(r *nriv1beta1.LinuxResources) *nriv1beta1.LinuxMemory {
	if r.Memory == nil {
		r.Memory = &nriv1beta1.LinuxMemory{}
	}
	return r.Memory
}

func cpu(r *nriv1beta1.LinuxResources) *nriv1beta1.LinuxCPU {
	if r.Cpu == nil {
		r.Cpu = &nriv1beta1.LinuxCPU{}
	}
	return r.Cpu
}

func annotation(k, v string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		if a.Annotations == nil {
			a.Annotations = map[string]string{}
		}
		a.Annotations[k] = v
	}
}

func removeAnnotation(k string) func(a *nriv1beta1.ContainerAdjustment) {
	return annotation("-"+k, "")
}

func mount(dest, src string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		a.Mounts = append(a.Mounts, &nriv1beta1.Mount{Destination: dest, Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
	}
}

func removeMount(dest string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		a.Mounts = append(a.Mounts, &nriv1beta1.Mount{Destination: "-" + dest})
	}
}

func env(k, v string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		a.Env = append(a.Env, &nriv1beta1.KeyValue{Key: k, Value: v})
	}
}

func removeEnv(k string) func(a *nriv1beta1.ContainerAdjustment) { return env("-"+k, "") }

func device(path string, minor int64) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		l := lin(a)
		l.Devices = append(l.Devices, &nriv1beta1.LinuxDevice{Path: path, Type: "c", Major: 511, Minor: minor, FileMode: wrapperspb.UInt32(0o660)})
	}
}

func removeDevice(path string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		l := lin(a)
		l.Devices = append(l.Devices, &nriv1beta1.LinuxDevice{Path: "-" + path})
	}
}

func namespace(typ, path string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		l := lin(a)
		l.Namespaces = append(l.Namespaces, &nriv1beta1.LinuxNamespace{Type: typ, Path: path})
	}
}

func sysctl(k, v string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		l := lin(a)
		if l.Sysctl == nil {
			l.Sysctl = map[string]string{}
		}
		l.Sysctl[k] = v
	}
}

func netDevice(k, name string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		l := lin(a)
		if l.NetDevices == nil {
			l.NetDevices = map[string]*nriv1beta1.LinuxNetDevice{}
		}
		if name == "" {
			l.NetDevices[k] = &nriv1beta1.LinuxNetDevice{}
		} else {
			l.NetDevices[k] = &nriv1beta1.LinuxNetDevice{Name: name}
		}
	}
}

func args(v ...string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) { a.Args = v }
}

func hooks(path string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		h := func(kind string) []*nriv1beta1.Hook {
			return []*nriv1beta1.Hook{{Path: path, Args: []string{path, kind}, Timeout: wrapperspb.Int64(5)}}
		}
		a.Hooks = &nriv1beta1.Hooks{
			Prestart: h("prestart"), CreateRuntime: h("create-runtime"), CreateContainer: h("create-container"),
			StartContainer: h("start-container"), Poststart: h("poststart"), Poststop: h("poststop"),
		}
	}
}

func rlimit(typ string, hard, soft uint64) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		a.Rlimits = append(a.Rlimits, &nriv1beta1.POSIXRlimit{Type: typ, Hard: hard, Soft: soft})
	}
}

func cdi(name string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		a.CdiDevices = append(a.CdiDevices, &nriv1beta1.CDIDevice{Name: name})
	}
}

func withUpdates(rsp createRsp, us ...*nriv1beta1.ContainerUpdate) createRsp {
	if rsp == nil {
		rsp = &nriv1beta1.CreateContainerResponse{}
	}
	rsp.Update = append(rsp.Update, us...)
	return rsp
}

func withEvictions(rsp createRsp, es ...*nriv1beta1.ContainerEviction) createRsp {
	if rsp == nil {
		rsp = &nriv1beta1.CreateContainerResponse{}
	}
	rsp.Evict = append(rsp.Evict, es...)
	return rsp
}

// upd builds a ContainerUpdate of container id.
func upd(id string, ignore bool, fs ...func(r *nriv1beta1.LinuxResources)) *nriv1beta1.ContainerUpdate {
	r := &nriv1beta1.LinuxResources{}
	for _, f := range fs {
		f(r)
	}
	return &nriv1beta1.ContainerUpdate{ContainerId: id, Linux: &nriv1beta1.LinuxContainerUpdate{Resources: r}, IgnoreFailure: ignore}
}

func memLimit(v int64) func(r *nriv1beta1.LinuxResources) {
	return func(r *nriv1beta1.LinuxResources) { mem(r).Limit = wrapperspb.Int64(v) }
}

func memReservation(v int64) func(r *nriv1beta1.LinuxResources) {
	return func(r *nriv1beta1.LinuxResources) { mem(r).Reservation = wrapperspb.Int64(v) }
}

func memSwap(v int64) func(r *nriv1beta1.LinuxResources) {
	return func(r *nriv1beta1.LinuxResources) { mem(r).Swap = wrapperspb.Int64(v) }
}

func cpuShares(v uint64) func(r *nriv1beta1.LinuxResources) {
	return func(r *nriv1beta1.LinuxResources) { cpu(r).Shares = wrapperspb.UInt64(v) }
}

func cpuset(cpus string) func(r *nriv1beta1.LinuxResources) {
	return func(r *nriv1beta1.LinuxResources) { cpu(r).Cpus = cpus }
}

func pids(v int64) func(r *nriv1beta1.LinuxResources) {
	return func(r *nriv1beta1.LinuxResources) { r.Pids = &nriv1beta1.LinuxPids{Limit: v} }
}

func hugepage(size string, v uint64) func(r *nriv1beta1.LinuxResources) {
	return func(r *nriv1beta1.LinuxResources) {
		r.HugepageLimits = append(r.HugepageLimits, &nriv1beta1.HugepageLimit{PageSize: size, Limit: v})
	}
}

func unified(k, v string) func(r *nriv1beta1.LinuxResources) {
	return func(r *nriv1beta1.LinuxResources) {
		if r.Unified == nil {
			r.Unified = map[string]string{}
		}
		r.Unified[k] = v
	}
}

func blockio(v string) func(r *nriv1beta1.LinuxResources) {
	return func(r *nriv1beta1.LinuxResources) { r.BlockioClass = wrapperspb.String(v) }
}

func rdtClass(v string) func(r *nriv1beta1.LinuxResources) {
	return func(r *nriv1beta1.LinuxResources) { r.RdtClass = wrapperspb.String(v) }
}

func deviceRule(major int64) func(r *nriv1beta1.LinuxResources) {
	return func(r *nriv1beta1.LinuxResources) {
		r.Devices = append(r.Devices, &nriv1beta1.LinuxDeviceCgroup{Allow: true, Type: "c", Major: wrapperspb.Int64(major), Access: "rwm"})
	}
}

// resAdj applies resource setters to an adjustment's resources.
func resAdj(fs ...func(r *nriv1beta1.LinuxResources)) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		r := res(a)
		for _, f := range fs {
			f(r)
		}
	}
}

func evict(id, reason string) *nriv1beta1.ContainerEviction {
	return &nriv1beta1.ContainerEviction{ContainerId: id, Reason: reason}
}
