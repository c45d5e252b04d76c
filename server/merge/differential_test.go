package merge_test

// Differential tests: the same plugin responses go through classic NRI
// (github.com/containerd/nri v0.12.5, pkg/adaptation with builtin plugins)
// and through this package, and everything observable is compared: the
// merged adjustment, updates and evictions, the owners handed to validators,
// the pristine container, the container each plugin was sent and the final
// request. Cases marked with a deviation state how and why we differ; the
// test checks that the difference exists and is exactly that.

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

type createCase struct {
	name    string
	tweak   func(c *nriv1beta1.Container)
	plugins []plug[createRsp]
	wantErr string // our exact error, "" for success

	// Deliberate changes. deviation describes it; then either fix turns
	// classic's outcome into ours, or classicErr is classic's error where we
	// succeed (check asserts our outcome).
	deviation  string
	fix        func(classic *outcome)
	classicErr string
	check      func(t *testing.T, ours outcome)
}

func conflictMsg(newer, older, name, key string) string {
	return fmt.Sprintf("plugins %q and %q both tried to set %s %s", newer, older, name, key)
}

// Owner helpers for fixes.
func fieldOwners(o *nriv1beta1.OwningPlugins, id string) *nriv1beta1.FieldOwners {
	if o.Owners == nil {
		o.Owners = map[string]*nriv1beta1.FieldOwners{}
	}
	f := o.Owners[id]
	if f == nil {
		f = &nriv1beta1.FieldOwners{}
		o.Owners[id] = f
	}
	return f
}

func setCompoundOwner(o *nriv1beta1.OwningPlugins, id string, field nriv1beta1.Field, key, owner string) {
	f := fieldOwners(o, id)
	if f.Compound == nil {
		f.Compound = map[int32]*nriv1beta1.CompoundFieldOwners{}
	}
	c := f.Compound[int32(field)]
	if c == nil {
		c = &nriv1beta1.CompoundFieldOwners{Owners: map[string]string{}}
		f.Compound[int32(field)] = c
	}
	c.Owners[key] = owner
}

func setSimpleOwner(o *nriv1beta1.OwningPlugins, id string, field nriv1beta1.Field, owner string) {
	f := fieldOwners(o, id)
	if f.Simple == nil {
		f.Simple = map[int32]string{}
	}
	f.Simple[int32(field)] = owner
}

func delSimpleOwner(o *nriv1beta1.OwningPlugins, id string, field nriv1beta1.Field) {
	delete(fieldOwners(o, id).Simple, int32(field))
}

func ensureAdjust(o *outcome) *nriv1beta1.ContainerAdjustment {
	if o.adjust == nil {
		o.adjust = &nriv1beta1.ContainerAdjustment{}
	}
	return o.adjust
}

func ensureLinux(o *outcome) *nriv1beta1.LinuxContainerAdjustment {
	a := ensureAdjust(o)
	if a.Linux == nil {
		a.Linux = &nriv1beta1.LinuxContainerAdjustment{}
	}
	return a.Linux
}

func dropMountMarker(ms []*nriv1beta1.Mount, dest string) []*nriv1beta1.Mount {
	return slices.DeleteFunc(ms, func(m *nriv1beta1.Mount) bool { return m.Destination == "-"+dest })
}

const (
	annKey  = "example.com/owner"
	rtAnn   = "io.kubernetes.container.hash" // an annotation of the runtime's
	rtEnv   = "APP_ENV"                      // an env variable of the runtime's
	rtMount = "/etc/hosts"                   // a mount of the runtime's
	rtDev   = "/dev/fuse"                    // a device of the runtime's (baseContainer)
	rtSysct = "net.ipv4.ip_forward"          // a sysctl of the runtime's (baseContainer)
	rtNetif = "eth9"                         // a net device of the runtime's (baseContainer)
)

// fieldCases are the cases for every field: one plugin sets it; two plugins
// conflict on it; a list field given twice by one plugin conflicts with
// itself; an update of another container sets it or conflicts on it.
func fieldCases() []createCase {
	var cases []createCase

	// Every field: one plugin sets it; two plugins conflict on it; a list
	// field given twice by one plugin conflicts with itself.
	for _, f := range simpleFields {
		cases = append(cases,
			createCase{name: "set/" + f.name, plugins: []plug[createRsp]{
				cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) { f.set(a, 1) })),
				cp("10-observer", nil),
			}},
			createCase{name: "conflict/" + f.name, plugins: []plug[createRsp]{
				cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) { f.set(a, 1) })),
				cp("10-b", adj(func(a *nriv1beta1.ContainerAdjustment) { f.set(a, 2) })),
			}, wantErr: conflictMsg("10-b", "00-a", f.name, "")},
		)
	}
	for _, f := range compoundFields {
		cases = append(cases,
			createCase{name: "set/" + f.name, plugins: []plug[createRsp]{
				cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) { f.set(a, f.key, 1) })),
				cp("10-observer", nil),
			}},
			createCase{name: "set-two-keys/" + f.name, plugins: []plug[createRsp]{
				cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) { f.set(a, f.key, 1) })),
				cp("10-b", adj(func(a *nriv1beta1.ContainerAdjustment) { f.set(a, f.key+"-other", 2) })),
				cp("20-observer", nil),
			}},
			createCase{name: "conflict/" + f.name, plugins: []plug[createRsp]{
				cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) { f.set(a, f.key, 1) })),
				cp("10-b", adj(func(a *nriv1beta1.ContainerAdjustment) { f.set(a, f.key, 2) })),
			}, wantErr: conflictMsg("10-b", "00-a", f.name, f.key)},
		)
		if f.list {
			cases = append(cases, createCase{name: "same-plugin-twice/" + f.name, plugins: []plug[createRsp]{
				cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) { f.set(a, f.key, 1); f.set(a, f.key, 2) })),
			}, wantErr: conflictMsg("00-a", "00-a", f.name, f.key)})
		}
	}

	// Every updatable field: set by one plugin's update of another
	// container, conflicting between two plugins.
	updatable := append(slices.Clone(simpleFields[:15]), simpleFields[16:18]...) // memory, cpu, blockio, rdt class
	for _, f := range updatable {
		u := func(v int, ignore bool) *nriv1beta1.ContainerUpdate {
			a := &nriv1beta1.ContainerAdjustment{}
			f.set(a, v)
			return upd("ctr-1", ignore, func(r *nriv1beta1.LinuxResources) { proto.Merge(r, a.Linux.Resources) })
		}
		cases = append(cases,
			createCase{name: "update-set/" + f.name, plugins: []plug[createRsp]{
				cp("00-a", withUpdates(nil, u(1, false))),
			}},
			createCase{name: "update-conflict/" + f.name, plugins: []plug[createRsp]{
				cp("00-a", withUpdates(nil, u(1, false))),
				cp("10-b", withUpdates(nil, u(2, false))),
			}, wantErr: conflictMsg("10-b", "00-a", f.name, "")},
			createCase{name: "update-conflict-ignored/" + f.name, plugins: []plug[createRsp]{
				cp("00-a", withUpdates(nil, u(1, false))),
				cp("10-b", withUpdates(nil, u(2, true))),
			}},
		)
	}
	return cases
}

func createCases() []createCase {
	cases := fieldCases()

	cases = append(cases,
		createCase{name: "everything/one-plugin", plugins: []plug[createRsp]{
			cp("00-a", adj(everything(1))),
			cp("10-observer", nil),
		}},
		createCase{name: "everything/two-plugins-disjoint", plugins: []plug[createRsp]{
			cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) {
				for _, f := range simpleFields[:len(simpleFields)/2] {
					f.set(a, 1)
				}
				for _, f := range compoundFields {
					f.set(a, f.key, 1)
				}
			})),
			cp("10-b", adj(func(a *nriv1beta1.ContainerAdjustment) {
				for _, f := range simpleFields[len(simpleFields)/2:] {
					f.set(a, 2)
				}
				for _, f := range compoundFields {
					f.set(a, f.key+"-b", 2)
				}
			})),
			cp("20-observer", nil),
		}},
		createCase{name: "nil-and-empty-responses", plugins: []plug[createRsp]{
			cp("00-nil", nil),
			cp("10-empty", &nriv1beta1.CreateContainerResponse{}),
			cp("20-empty-adjust", adj()),
			cp("30-empty-linux", adj(func(a *nriv1beta1.ContainerAdjustment) {
				res(a).Memory = &nriv1beta1.LinuxMemory{}
				res(a).Cpu = &nriv1beta1.LinuxCPU{}
				a.Hooks = &nriv1beta1.Hooks{}
			})),
		}},

		// Hooks accumulate, owners comma-joined; they never conflict.
		createCase{name: "hooks/accumulate", plugins: []plug[createRsp]{
			cp("00-a", adj(hooks("/bin/hook-a"))),
			cp("10-b", adj(hooks("/bin/hook-b"))),
			cp("20-c", adj(hooks("/bin/hook-c"))),
		}},

		// Args.
		createCase{name: "args/update-args-overrides", plugins: []plug[createRsp]{
			cp("00-a", adj(args("/bin/a"))),
			cp("10-b", adj(args("", "/bin/b", "--flag"))),
			cp("20-observer", nil),
		}},
		createCase{name: "args/update-args-first", plugins: []plug[createRsp]{
			cp("00-a", adj(args("", "/bin/a"))),
			cp("10-observer", nil),
		}},
		createCase{name: "args/update-args-empty", plugins: []plug[createRsp]{
			cp("00-a", adj(args(""))),
			cp("10-observer", nil),
		}},
		createCase{name: "args/set-after-update-args", plugins: []plug[createRsp]{
			cp("00-a", adj(args("", "/bin/a"))),
			cp("10-b", adj(args("/bin/b"))),
		}, wantErr: conflictMsg("10-b", "00-a", "Args", "")},

		// Override idiom: remove then re-add in one response.
		createCase{name: "override/mount", plugins: []plug[createRsp]{
			cp("00-a", adj(mount("/data", "/srv/a"))),
			cp("10-b", adj(removeMount("/data"), mount("/data", "/srv/b"))),
			cp("20-observer", nil),
		}},
		createCase{name: "override/mount-runtime", plugins: []plug[createRsp]{
			cp("00-a", adj(removeMount(rtMount), mount(rtMount, "/srv/hosts"))),
			cp("10-observer", nil),
		}},
		createCase{name: "override/env", plugins: []plug[createRsp]{
			cp("00-a", adj(env("FOO", "a"))),
			cp("10-b", adj(removeEnv("FOO"), env("FOO", "b"))),
			cp("20-observer", nil),
		}},
		createCase{name: "override/env-runtime", plugins: []plug[createRsp]{
			cp("00-a", adj(removeEnv(rtEnv), env(rtEnv, "staging"))),
			cp("10-observer", nil),
		}},
		createCase{name: "override/mount-add-listed-first", plugins: []plug[createRsp]{
			cp("00-a", adj(mount("/data", "/srv/a"))),
			cp("10-b", adj(mount("/data", "/srv/b"), removeMount("/data"))),
			cp("20-observer", nil),
		}},
		createCase{name: "override/env-add-listed-first", plugins: []plug[createRsp]{
			cp("00-a", adj(env("FOO", "a"))),
			cp("10-b", adj(env("FOO", "b"), removeEnv("FOO"))),
			cp("20-observer", nil),
		}},
		createCase{name: "override/mount-other-plugin-without-removal", plugins: []plug[createRsp]{
			cp("00-a", adj(mount("/data", "/srv/a"))),
			cp("10-b", adj(mount("/data", "/srv/b"))),
		}, wantErr: conflictMsg("10-b", "00-a", "Mounts", "/data")},
		createCase{name: "pure-removal/namespace-absent", plugins: []plug[createRsp]{
			cp("00-a", adj(namespace("-time", ""))),
			cp("10-observer", nil),
		}, deviation: "a namespace removal clears (owner -00-a) instead of claiming (classic: 00-a)",
			fix: func(c *outcome) {
				setCompoundOwner(c.owners, ctrID, nriv1beta1.Field_FIELD_NAMESPACE, "time", "-00-a")
			}},
		createCase{name: "pure-removal/two-mounts-one-env", plugins: []plug[createRsp]{
			cp("00-a", adj(mount("/data", "/srv/a"), env("FOO", "1"))),
			cp("10-b", adj(removeMount("/data"), removeEnv("FOO"), mount("/other", "/srv/o"))),
			cp("20-observer", nil),
		}, deviation: "the -FOO marker reaches the reply (classic drops it)",
			fix: func(c *outcome) { c.adjust.Env = append(c.adjust.Env, &nriv1beta1.KeyValue{Key: "-FOO"}) }},
		createCase{name: "override/device", plugins: []plug[createRsp]{
			cp("00-a", adj(device("/dev/nri0", 1))),
			cp("10-b", adj(removeDevice("/dev/nri0"), device("/dev/nri0", 2))),
			cp("20-observer", nil),
		}},
		createCase{name: "override/annotation", plugins: []plug[createRsp]{
			cp("00-a", adj(annotation(annKey, "a"))),
			cp("10-b", adj(removeAnnotation(annKey), annotation(annKey, "b"))),
			cp("20-observer", nil),
		}, deviation: "reply holds only k, not also -k",
			fix: func(c *outcome) { delete(c.adjust.Annotations, "-"+annKey) }},
		createCase{name: "override/annotation-runtime", plugins: []plug[createRsp]{
			cp("00-a", adj(removeAnnotation(rtAnn), annotation(rtAnn, "new"))),
			cp("10-observer", nil),
		}, deviation: "reply holds only k, not also -k",
			fix: func(c *outcome) { delete(c.adjust.Annotations, "-"+rtAnn) }},
		createCase{name: "override/sysctl", tweak: nil, plugins: []plug[createRsp]{
			cp("00-a", adj(sysctl("net.core.somaxconn", "1024"))),
			cp("10-b", adj(sysctl("-net.core.somaxconn", ""), sysctl("net.core.somaxconn", "4096"))),
			cp("20-observer", nil),
		}, deviation: "reply holds only k, not also -k",
			fix: func(c *outcome) { delete(c.adjust.Linux.Sysctl, "-net.core.somaxconn") }},
		createCase{name: "override/net-device", plugins: []plug[createRsp]{
			cp("00-a", adj(netDevice("eth1", "net1"))),
			cp("10-b", adj(netDevice("-eth1", ""), netDevice("eth1", "net2"))),
			cp("20-observer", nil),
		}, deviation: "reply holds only k, not also -k",
			fix: func(c *outcome) { delete(c.adjust.Linux.NetDevices, "-eth1") }},
		createCase{name: "override/namespace", plugins: []plug[createRsp]{
			cp("00-a", adj(namespace("-network", ""), namespace("network", "/var/run/netns/nri"))),
			cp("10-observer", nil),
		}, deviation: "remove-then-add of a namespace in one response is the override idiom (classic: the plugin conflicts with itself)",
			classicErr: conflictMsg("00-a", "00-a", "Namespace", "network"),
			check: func(t *testing.T, o outcome) {
				ns := o.adjust.GetLinux().GetNamespaces()
				if len(ns) != 1 || ns[0].Type != "network" || ns[0].Path != "/var/run/netns/nri" {
					t.Errorf("reply namespaces = %v, want only network:/var/run/netns/nri", ns)
				}
				if got := o.owners.Owners[ctrID].Compound[int32(nriv1beta1.Field_FIELD_NAMESPACE)].Owners["network"]; got != "00-a" {
					t.Errorf("namespace owner = %q", got)
				}
				for _, n := range o.final.Linux.Namespaces {
					if n.Type == "network" && n.Path != "/var/run/netns/nri" {
						t.Errorf("request still has network namespace %q", n.Path)
					}
				}
			}},

		// Pure removals.
		createCase{name: "pure-removal/mount-after-plugin", plugins: []plug[createRsp]{
			cp("00-a", adj(mount("/data", "/srv/a"))),
			cp("10-b", adj(removeMount("/data"))),
			cp("20-observer", nil),
		}},
		createCase{name: "pure-removal/mount-runtime", plugins: []plug[createRsp]{
			cp("00-a", adj(removeMount(rtMount))),
			cp("10-observer", nil),
		}},
		createCase{name: "pure-removal/mount-then-conflict", plugins: []plug[createRsp]{
			cp("00-a", adj(mount("/data", "/srv/a"))),
			cp("10-b", adj(removeMount("/data"))),
			cp("20-c", adj(mount("/data", "/srv/c"))),
		}, wantErr: conflictMsg("20-c", "10-b", "Mounts", "/data")},
		createCase{name: "pure-removal/namespace", plugins: []plug[createRsp]{
			cp("00-a", adj(namespace("-network", ""))),
			cp("10-observer", nil),
		}, deviation: "a namespace removal clears (owner -00-a) instead of claiming (classic: 00-a)",
			fix: func(c *outcome) {
				setCompoundOwner(c.owners, ctrID, nriv1beta1.Field_FIELD_NAMESPACE, "network", "-00-a")
			}},
		createCase{name: "pure-removal/namespace-claimed", plugins: []plug[createRsp]{
			cp("00-a", adj(namespace("network", "/var/run/netns/a"))),
			cp("10-b", adj(namespace("-network", ""))),
		}, deviation: "removing another plugin's namespace is allowed, as for every other field (classic: a conflict)",
			classicErr: conflictMsg("10-b", "00-a", "Namespace", "network"),
			check: func(t *testing.T, o outcome) {
				ns := o.adjust.GetLinux().GetNamespaces()
				if len(ns) != 1 || ns[0].Type != "-network" {
					t.Errorf("reply namespaces = %v, want only the -network marker", ns)
				}
				if got := o.owners.Owners[ctrID].Compound[int32(nriv1beta1.Field_FIELD_NAMESPACE)].Owners["network"]; got != "-10-b" {
					t.Errorf("namespace owner = %q, want -10-b", got)
				}
			}},
		createCase{name: "override/namespace-of-other-plugin", plugins: []plug[createRsp]{
			cp("00-a", adj(namespace("network", "/var/run/netns/a"))),
			cp("10-b", adj(namespace("-network", ""), namespace("network", "/var/run/netns/b"))),
		}, deviation: "remove-then-add overrides another plugin's namespace (classic: a conflict)",
			classicErr: conflictMsg("10-b", "00-a", "Namespace", "network"),
			check: func(t *testing.T, o outcome) {
				ns := o.adjust.GetLinux().GetNamespaces()
				if len(ns) != 1 || ns[0].Type != "network" || ns[0].Path != "/var/run/netns/b" {
					t.Errorf("reply namespaces = %v, want only network:/var/run/netns/b", ns)
				}
			}},
		createCase{name: "pure-removal/env-after-plugin", plugins: []plug[createRsp]{
			cp("00-a", adj(env("FOO", "a"))),
			cp("10-b", adj(removeEnv("FOO"))),
			cp("20-observer", nil),
		}, deviation: "the -FOO marker reaches the reply (classic drops it)",
			fix: func(c *outcome) { ensureAdjust(c).Env = append(c.adjust.Env, &nriv1beta1.KeyValue{Key: "-FOO"}) }},
		createCase{name: "pure-removal/env-runtime", plugins: []plug[createRsp]{
			cp("00-a", adj(removeEnv(rtEnv))),
			cp("10-observer", nil),
		}, deviation: "the -APP_ENV marker reaches the reply (classic drops it: the runtime keeps APP_ENV)",
			fix: func(c *outcome) { ensureAdjust(c).Env = append(c.adjust.Env, &nriv1beta1.KeyValue{Key: "-" + rtEnv}) }},
		createCase{name: "pure-removal/device-after-plugin", plugins: []plug[createRsp]{
			cp("00-a", adj(device("/dev/nri0", 1))),
			cp("10-b", adj(removeDevice("/dev/nri0"))),
			cp("20-observer", nil),
		}, deviation: "the -/dev/nri0 marker reaches the reply (classic drops it)",
			fix: func(c *outcome) {
				l := ensureLinux(c)
				l.Devices = append(l.Devices, &nriv1beta1.LinuxDevice{Path: "-/dev/nri0"})
			}},
		createCase{name: "pure-removal/device-runtime", plugins: []plug[createRsp]{
			cp("00-a", adj(removeDevice(rtDev))),
			cp("10-observer", nil),
		}, deviation: "the -/dev/fuse marker reaches the reply (classic drops it: the runtime keeps /dev/fuse)",
			fix: func(c *outcome) {
				l := ensureLinux(c)
				l.Devices = append(l.Devices, &nriv1beta1.LinuxDevice{Path: "-" + rtDev})
			}},
		createCase{name: "pure-removal/annotation-after-plugin", plugins: []plug[createRsp]{
			cp("00-a", adj(annotation(annKey, "a"))),
			cp("10-b", adj(removeAnnotation(annKey))),
			cp("20-observer", nil),
		}, deviation: "k is dropped from the reply (classic: both k and -k), ownership is cleared to -10-b, the request loses k",
			fix: func(c *outcome) {
				delete(c.adjust.Annotations, annKey)
				setCompoundOwner(c.owners, ctrID, nriv1beta1.Field_FIELD_ANNOTATIONS, annKey, "-10-b")
				delete(c.final.Annotations, annKey)
				delete(c.seen[2].Annotations, annKey)
			}},
		createCase{name: "pure-removal/annotation-runtime", plugins: []plug[createRsp]{
			cp("00-a", adj(removeAnnotation(rtAnn))),
			cp("10-observer", nil),
		}, deviation: "the request loses k, so later plugins see the removal (classic keeps it)",
			fix: func(c *outcome) {
				delete(c.final.Annotations, rtAnn)
				delete(c.seen[1].Annotations, rtAnn)
			}},
		createCase{name: "pure-removal/annotation-then-set", plugins: []plug[createRsp]{
			cp("00-a", adj(annotation(annKey, "a"))),
			cp("10-b", adj(removeAnnotation(annKey))),
			cp("20-c", adj(annotation(annKey, "c"))),
		}, deviation: "the removal cleared ownership to -10-b, so the conflict names 10-b (classic: 00-a, never cleared)",
			wantErr: conflictMsg("20-c", "10-b", "Annotations", annKey),
			fix: func(c *outcome) {
				c.err = conflictMsg("20-c", "10-b", "Annotations", annKey)
				delete(c.seen[2].Annotations, annKey)
			}},
		createCase{name: "pure-removal/sysctl-after-plugin", plugins: []plug[createRsp]{
			cp("00-a", adj(sysctl("net.core.somaxconn", "1024"))),
			cp("10-b", adj(sysctl("-net.core.somaxconn", ""))),
			cp("20-observer", nil),
		}, deviation: "k is dropped from the reply, ownership is cleared to -10-b, the request loses k",
			fix: func(c *outcome) {
				delete(c.adjust.Linux.Sysctl, "net.core.somaxconn")
				setCompoundOwner(c.owners, ctrID, nriv1beta1.Field_FIELD_SYSCTL, "net.core.somaxconn", "-10-b")
				delete(c.final.Linux.Sysctl, "net.core.somaxconn")
				delete(c.seen[2].Linux.Sysctl, "net.core.somaxconn")
			}},
		createCase{name: "pure-removal/sysctl-runtime", plugins: []plug[createRsp]{
			cp("00-a", adj(sysctl("-"+rtSysct, ""))),
			cp("10-observer", nil),
		}, deviation: "the request loses k",
			fix: func(c *outcome) {
				delete(c.final.Linux.Sysctl, rtSysct)
				delete(c.seen[1].Linux.Sysctl, rtSysct)
			}},
		createCase{name: "pure-removal/net-device-after-plugin", plugins: []plug[createRsp]{
			cp("00-a", adj(netDevice("eth1", "net1"))),
			cp("10-b", adj(netDevice("-eth1", ""))),
			cp("20-observer", nil),
		}, deviation: "k is dropped from the reply, ownership is cleared to -10-b, the request loses k",
			fix: func(c *outcome) {
				delete(c.adjust.Linux.NetDevices, "eth1")
				setCompoundOwner(c.owners, ctrID, nriv1beta1.Field_FIELD_LINUX_NET_DEVICES, "eth1", "-10-b")
				delete(c.final.Linux.NetDevices, "eth1")
				delete(c.seen[2].Linux.NetDevices, "eth1")
			}},
		createCase{name: "pure-removal/net-device-runtime", plugins: []plug[createRsp]{
			cp("00-a", adj(netDevice("-"+rtNetif, ""))),
			cp("10-observer", nil),
		}, deviation: "the request loses k",
			fix: func(c *outcome) {
				delete(c.final.Linux.NetDevices, rtNetif)
				delete(c.seen[1].Linux.NetDevices, rtNetif)
			}},

		// A removal of the runtime's entry, then another plugin sets it.
		createCase{name: "remove-then-set/mount", plugins: []plug[createRsp]{
			cp("00-a", adj(removeMount(rtMount))),
			cp("10-b", adj(mount(rtMount, "/srv/hosts"))),
			cp("20-observer", nil),
		}, deviation: "the later addition drops the earlier -k from the reply (classic: both)",
			fix: func(c *outcome) { c.adjust.Mounts = dropMountMarker(c.adjust.Mounts, rtMount) }},
		createCase{name: "remove-then-set/annotation", plugins: []plug[createRsp]{
			cp("00-a", adj(removeAnnotation(rtAnn))),
			cp("10-b", adj(annotation(rtAnn, "b"))),
			cp("20-observer", nil),
		}, deviation: "the later addition drops the earlier -k from the reply; 10-b sees the removal",
			fix: func(c *outcome) {
				delete(c.adjust.Annotations, "-"+rtAnn)
				delete(c.seen[1].Annotations, rtAnn)
			}},
		createCase{name: "remove-then-set/env", plugins: []plug[createRsp]{
			cp("00-a", adj(removeEnv(rtEnv))),
			cp("10-b", adj(env(rtEnv, "b"))),
			cp("20-observer", nil),
		}},
		createCase{name: "remove-then-set/device", plugins: []plug[createRsp]{
			cp("00-a", adj(removeDevice(rtDev))),
			cp("10-b", adj(device(rtDev, 7))),
			cp("20-observer", nil),
		}},
		createCase{name: "remove-twice/mount", plugins: []plug[createRsp]{
			cp("00-a", adj(removeMount(rtMount))),
			cp("10-b", adj(removeMount(rtMount))),
		}, deviation: "the marker appears once (classic: twice)",
			fix: func(c *outcome) { c.adjust.Mounts = c.adjust.Mounts[:1] }},

		// RDT.
		createCase{name: "rdt/remove", plugins: []plug[createRsp]{
			cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) { rdt(a).Remove = true })),
		}},
		createCase{name: "rdt/remove-after-set", plugins: []plug[createRsp]{
			cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) {
				simpleFields[23].set(a, 1) // RdtClosID
				simpleFields[24].set(a, 1) // RdtSchemata
			})),
			cp("10-b", adj(func(a *nriv1beta1.ContainerAdjustment) { rdt(a).Remove = true })),
		}},
		createCase{name: "rdt/remove-and-set", plugins: []plug[createRsp]{
			cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) { simpleFields[23].set(a, 1) })),
			cp("10-b", adj(func(a *nriv1beta1.ContainerAdjustment) {
				rdt(a).Remove = true
				simpleFields[25].set(a, 1) // RdtEnableMonitoring
			})),
		}},
		createCase{name: "rdt/set-after-other-removed", plugins: []plug[createRsp]{
			cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) { simpleFields[23].set(a, 1) })),
			cp("10-b", adj(func(a *nriv1beta1.ContainerAdjustment) { rdt(a).Remove = true })),
			cp("20-c", adj(func(a *nriv1beta1.ContainerAdjustment) { simpleFields[23].set(a, 3) })),
		}, wantErr: conflictMsg("20-c", "10-b", "RdtClosID", "")},

		// Resources that never conflict, or conflict by key.
		createCase{name: "resources/device-rules-accumulate", plugins: []plug[createRsp]{
			cp("00-a", adj(resAdj(deviceRule(10), deviceRule(11)))),
			cp("10-b", adj(resAdj(deviceRule(10)))),
			cp("20-observer", nil),
		}},
		createCase{name: "resources/hugepages-two-sizes", plugins: []plug[createRsp]{
			cp("00-a", adj(resAdj(hugepage("2MB", 1<<30)))),
			cp("10-b", adj(resAdj(hugepage("1GB", 2<<30)))),
			cp("20-observer", nil),
		}},
		createCase{name: "cdi/appended-reply-only", plugins: []plug[createRsp]{
			cp("00-a", adj(cdi("vendor.com/gpu=0"), cdi("vendor.com/gpu=1"))),
			cp("10-b", adj(cdi("vendor.com/nic=0"))),
			cp("20-observer", nil),
		}},

		// A realistic mix.
		createCase{name: "realistic/three-plugins", plugins: []plug[createRsp]{
			cp("00-resource-manager", realisticResponse()),
			cp("10-device-injector", adj(device("/dev/nri-gpu0", 0), mount("/run/nri-gpu", "/run/nri-gpu"),
				env("NRI_GPU", "0"), annotation("gpu.example.com/assigned", "0"), cdi("vendor.com/gpu=0"))),
			cp("20-logger", adj(hooks("/usr/libexec/oci-log-hook"), annotation("logger.example.com/seen", "true"))),
		}},

		// Updates of other containers.
		createCase{name: "update/merged-first-touch", plugins: []plug[createRsp]{
			cp("00-a", withUpdates(nil, upd("ctr-2", true, memLimit(1<<30)), upd("ctr-1", false, cpuShares(512)))),
			cp("10-b", withUpdates(nil, upd("ctr-1", true, memLimit(2<<30), hugepage("2MB", 1<<21)), upd("ctr-3", true, cpuset("0-1")))),
			cp("20-c", withUpdates(nil, upd("ctr-2", true, unified("memory.high", "1G"), blockio("slow"), rdtClass("gold")))),
		}},
		createCase{name: "update/all-fields", plugins: []plug[createRsp]{
			cp("00-a", withUpdates(nil, upd("ctr-1", false, func(r *nriv1beta1.LinuxResources) {
				a := &nriv1beta1.ContainerAdjustment{Linux: &nriv1beta1.LinuxContainerAdjustment{Resources: r}}
				for _, f := range simpleFields[:15] { // memory and cpu
					f.set(a, 3)
				}
				hugepage("2MB", 1<<22)(r)
				hugepage("1GB", 1<<30)(r)
				unified("memory.high", "2G")(r)
				unified("cpu.weight", "50")(r)
				blockio("fast")(r)
				rdtClass("silver")(r)
				deviceRule(13)(r) // ignored in updates, as in classic
			}))),
		}},
		createCase{name: "update/ignore-failure-anded", plugins: []plug[createRsp]{
			cp("00-a", withUpdates(nil, upd("ctr-1", true, memLimit(1<<30)))),
			cp("10-b", withUpdates(nil, upd("ctr-1", false, cpuShares(100)))),
			cp("20-c", withUpdates(nil, upd("ctr-1", true, memSwap(1<<31)))),
		}},
		createCase{name: "update/no-resources", plugins: []plug[createRsp]{
			cp("00-a", withUpdates(nil, &nriv1beta1.ContainerUpdate{ContainerId: "ctr-1", IgnoreFailure: true})),
		}},
		createCase{name: "update/conflict", plugins: []plug[createRsp]{
			cp("00-a", withUpdates(nil, upd("ctr-1", false, memLimit(1<<30)))),
			cp("10-b", withUpdates(nil, upd("ctr-1", false, memLimit(2<<30)))),
		}, wantErr: conflictMsg("10-b", "00-a", "MemLimit", "")},
		createCase{name: "update/conflict-unified", plugins: []plug[createRsp]{
			cp("00-a", withUpdates(nil, upd("ctr-1", false, unified("memory.high", "1G")))),
			cp("10-b", withUpdates(nil, upd("ctr-1", false, unified("memory.high", "2G")))),
		}, wantErr: conflictMsg("10-b", "00-a", "CgroupsUnified", "memory.high")},
		createCase{name: "update/same-container-other-fields", plugins: []plug[createRsp]{
			cp("00-a", withUpdates(nil, upd("ctr-1", false, memLimit(1<<30)), upd("ctr-1", false, cpuShares(10)))),
		}},
		createCase{name: "update/self", plugins: []plug[createRsp]{
			cp("00-a", withUpdates(nil, upd(ctrID, true, memLimit(1<<30)))),
		}, wantErr: fmt.Sprintf("plugin %q asked update of %q during creation", "00-a", ctrID)},
		createCase{name: "update/ignore-failure-conflict-existing", plugins: []plug[createRsp]{
			cp("00-a", withUpdates(nil, upd("ctr-1", false, memSwap(1<<30)))),
			cp("10-b", withUpdates(nil, upd("ctr-1", true, memLimit(2<<30), memSwap(2<<30)))),
		}, deviation: "the conflicting ignore_failure update is dropped whole: 10-b keeps no claim on MemLimit",
			fix: func(c *outcome) { delSimpleOwner(c.owners, "ctr-1", nriv1beta1.Field_FIELD_MEM_LIMIT) }},
		createCase{name: "update/ignore-failure-conflict-new", plugins: []plug[createRsp]{
			cp("00-a", withUpdates(nil, upd("ctr-1", true, hugepage("2MB", 1<<21), hugepage("2MB", 1<<22)))),
		}, deviation: "the self-conflicting ignore_failure update leaves no empty update entry and no claim",
			fix: func(c *outcome) {
				c.updates = nil
				delete(c.owners.Owners, "ctr-1")
			}},
		createCase{name: "update/ignore-failure-partial-claims", plugins: []plug[createRsp]{
			cp("00-a", withUpdates(nil, upd("ctr-1", false, memSwap(1<<30)))),
			cp("10-b", withUpdates(nil, upd("ctr-1", true, memLimit(2<<30), memSwap(2<<30)))),
			cp("20-c", withUpdates(nil, upd("ctr-1", false, memLimit(3<<30)))),
		}, deviation: "10-b's dropped update left no claim, so 20-c may set the limit",
			classicErr: conflictMsg("20-c", "10-b", "MemLimit", ""),
			check: func(t *testing.T, o outcome) {
				r := o.updates[0].GetLinux().GetResources()
				if len(o.updates) != 1 || r.GetMemory().GetLimit().GetValue() != 3<<30 || r.GetMemory().GetSwap().GetValue() != 1<<30 {
					t.Errorf("updates = %v", o.updates)
				}
			}},
		createCase{name: "update/pids", plugins: []plug[createRsp]{
			cp("00-a", withUpdates(nil, upd("ctr-1", false, pids(77), cpuShares(2)))),
		}, deviation: "the pids limit of an update is applied (classic drops it)",
			fix: func(c *outcome) {
				c.updates[0].Linux.Resources.Pids = &nriv1beta1.LinuxPids{Limit: 77}
				setSimpleOwner(c.owners, "ctr-1", nriv1beta1.Field_FIELD_PIDS_LIMIT, "00-a")
			}},

		// Evictions.
		createCase{name: "evictions", plugins: []plug[createRsp]{
			cp("00-a", withEvictions(adj(annotation("a", "1")), evict("ctr-1", "first"), evict("ctr-2", "memory pressure"))),
			cp("10-b", withEvictions(nil, evict("ctr-1", "second"), evict("ctr-3", "cpu pressure"))),
		}, deviation: "evictions are passed on, one per container, first reason wins (classic drops them)",
			fix: func(c *outcome) {
				c.evict = []*nriv1beta1.ContainerEviction{evict("ctr-1", "first"), evict("ctr-2", "memory pressure"), evict("ctr-3", "cpu pressure")}
			}},
	)
	return cases
}

func realisticResponse() createRsp {
	rsp := adj(func(a *nriv1beta1.ContainerAdjustment) {
		annotation("nri.example.com/adjusted-by", "00-resource-manager")(a)
		env("NRI_CPUS", "2-3")(a)
		mount("/run/nri-example", "/run/nri-example")(a)
		resAdj(cpuset("2-3"), func(r *nriv1beta1.LinuxResources) { cpu(r).Mems = "0" }, memLimit(1<<30))(a)
	})
	return withUpdates(rsp, upd("ctr-1", true, cpuset("0-1")))
}

func TestDifferentialCreateContainer(t *testing.T) {
	for _, tc := range createCases() {
		t.Run(tc.name, func(t *testing.T) {
			ctr := baseContainer()
			if tc.tweak != nil {
				tc.tweak(ctr)
			}
			classic := classicCreate(t, testPod, ctr, tc.plugins)
			ours, _ := oursCreate(t, testPod, ctr, tc.plugins)
			runDifferential(t, classic, ours, tc.wantErr, tc.deviation, tc.fix, tc.classicErr, tc.check)
		})
	}
}

// runDifferential checks one case: parity, or exactly the declared
// deviation.
func runDifferential(t *testing.T, classic, ours outcome, wantErr, deviation string, fix func(*outcome), classicErr string, check func(*testing.T, outcome)) {
	t.Helper()
	if ours.err != wantErr {
		t.Fatalf("our error = %q, want %q", ours.err, wantErr)
	}
	switch {
	case deviation == "":
		for _, d := range compare(classic, ours) {
			t.Error(d)
		}
	case classicErr != "":
		if classic.err != classicErr {
			t.Fatalf("deviation %q: classic error = %q, want %q", deviation, classic.err, classicErr)
		}
		if check == nil {
			t.Fatalf("deviation %q: no check of our outcome", deviation)
		}
	default:
		if len(compare(classic, ours)) == 0 {
			t.Fatalf("deviation %q: classic and ours do not differ", deviation)
		}
		fix(&classic)
		for _, d := range compare(classic, ours) {
			t.Errorf("beyond deviation %q: %s", deviation, d)
		}
	}
	if check != nil {
		check(t, ours)
	}
}

type updateCase struct {
	name       string
	requested  *nriv1beta1.LinuxResources
	plugins    []plug[updateRsp]
	wantErr    string
	deviation  string
	fix        func(classic *outcome)
	classicErr string
	check      func(t *testing.T, ours outcome)
}

func updates(us ...*nriv1beta1.ContainerUpdate) updateRsp {
	return &nriv1beta1.UpdateContainerResponse{Update: us}
}

func requestedResources() *nriv1beta1.LinuxResources {
	return &nriv1beta1.LinuxResources{
		Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(1 << 30)},
		Cpu:    baseContainer().Linux.Resources.Cpu.CloneVT(),
	}
}

func TestDifferentialUpdateContainer(t *testing.T) {
	withPids := requestedResources()
	withPids.Pids = &nriv1beta1.LinuxPids{Limit: 100}
	cases := []updateCase{
		{name: "no-plugin-changes", requested: requestedResources(), plugins: []plug[updateRsp]{
			up("00-a", nil), up("10-b", updates()),
		}},
		{name: "nil-requested", requested: nil, plugins: []plug[updateRsp]{
			up("00-a", updates(upd(ctrID, false, memLimit(1<<29)))), up("10-observer", nil),
		}},
		{name: "target-set", requested: requestedResources(), plugins: []plug[updateRsp]{
			up("00-a", updates(upd(ctrID, false, memLimit(1<<29), cpuset("0-3"), hugepage("2MB", 1<<21), unified("memory.high", "1G"), blockio("slow"), rdtClass("gold")))),
			up("10-b", updates(upd(ctrID, false, cpuShares(2048), memReservation(1<<28)))),
			up("20-observer", nil),
		}},
		{name: "target-conflict", requested: requestedResources(), plugins: []plug[updateRsp]{
			up("00-a", updates(upd(ctrID, false, memLimit(1<<29)))),
			up("10-b", updates(upd(ctrID, false, memLimit(1<<28)))),
		}, wantErr: conflictMsg("10-b", "00-a", "MemLimit", "")},
		{name: "target-and-others", requested: requestedResources(), plugins: []plug[updateRsp]{
			up("00-a", updates(upd("ctr-2", false, memLimit(1<<30)), upd(ctrID, true, cpuShares(10)))),
			up("10-b", updates(upd("ctr-1", false, cpuShares(20)), upd("ctr-2", false, cpuShares(30)))),
			up("20-observer", nil),
		}},
		{name: "target-ignore-failure-conflict", requested: requestedResources(), plugins: []plug[updateRsp]{
			up("00-a", updates(upd(ctrID, false, memLimit(1<<29)))),
			up("10-b", updates(upd(ctrID, true, memLimit(1<<28)))),
			up("20-observer", nil),
		}},
		{name: "target-ignore-failure-partial-claims", requested: requestedResources(), plugins: []plug[updateRsp]{
			up("00-a", updates(upd(ctrID, false, memSwap(1<<29)))),
			up("10-b", updates(upd(ctrID, true, memLimit(1<<28), memSwap(1<<28)))),
			up("20-c", updates(upd(ctrID, false, memLimit(1<<27)))),
		}, deviation: "10-b's dropped update left no claim, so 20-c may set the limit",
			classicErr: conflictMsg("20-c", "10-b", "MemLimit", ""),
			check: func(t *testing.T, o outcome) {
				if o.resources.GetMemory().GetLimit().GetValue() != 1<<27 || o.resources.GetMemory().GetSwap().GetValue() != 1<<29 {
					t.Errorf("target resources = %v", o.resources)
				}
			}},
		{name: "target-pids", requested: requestedResources(), plugins: []plug[updateRsp]{
			up("00-a", updates(upd(ctrID, false, pids(50)))),
			up("10-observer", nil),
		}, deviation: "the pids limit of an update is applied (classic drops it)",
			fix: func(c *outcome) {
				c.resources.Pids = &nriv1beta1.LinuxPids{Limit: 50}
				c.seenRes[1].Pids = &nriv1beta1.LinuxPids{Limit: 50}
			}},
		{name: "requested-pids-two-plugins", requested: withPids, plugins: []plug[updateRsp]{
			up("00-a", updates(upd(ctrID, false, memLimit(1<<29)))),
			up("10-b", updates(upd(ctrID, false, cpuShares(4096)))),
		}, deviation: "a pids limit in the runtime's request is not claimed by every plugin updating the target (classic: spurious conflict)",
			classicErr: conflictMsg("10-b", "00-a", "PidsLimit", ""),
			check: func(t *testing.T, o outcome) {
				r := o.resources
				if r.GetPids().GetLimit() != 100 || r.GetMemory().GetLimit().GetValue() != 1<<29 || r.GetCpu().GetShares().GetValue() != 4096 {
					t.Errorf("target resources = %v", r)
				}
			}},
		{name: "others-pids", requested: requestedResources(), plugins: []plug[updateRsp]{
			up("00-a", updates(upd("ctr-1", false, pids(10)))),
		}, deviation: "the pids limit of an update is applied (classic drops it)",
			fix: func(c *outcome) { c.updates[0].Linux.Resources.Pids = &nriv1beta1.LinuxPids{Limit: 10} }},
		{name: "evictions", requested: requestedResources(), plugins: []plug[updateRsp]{
			up("00-a", &nriv1beta1.UpdateContainerResponse{Evict: []*nriv1beta1.ContainerEviction{evict("ctr-1", "a"), evict("ctr-1", "again")}}),
			up("10-b", &nriv1beta1.UpdateContainerResponse{Evict: []*nriv1beta1.ContainerEviction{evict("ctr-2", "b")}}),
		}, deviation: "evictions are passed on (classic drops them)",
			fix: func(c *outcome) {
				c.evict = []*nriv1beta1.ContainerEviction{evict("ctr-1", "a"), evict("ctr-2", "b")}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctr := baseContainer()
			classic := classicUpdate(t, testPod, ctr, tc.requested, tc.plugins)
			ours := oursUpdate(t, testPod, ctr, tc.requested, tc.plugins)
			runDifferential(t, classic, ours, tc.wantErr, tc.deviation, tc.fix, tc.classicErr, tc.check)
		})
	}
}

func TestDifferentialStopContainer(t *testing.T) {
	stop := func(us ...*nriv1beta1.ContainerUpdate) stopRsp { return &nriv1beta1.StopContainerResponse{Update: us} }
	cases := []struct {
		name      string
		plugins   []plug[stopRsp]
		wantErr   string
		deviation string
		fix       func(*outcome)
	}{
		{name: "updates", plugins: []plug[stopRsp]{
			sp("00-a", stop(upd("ctr-1", false, memLimit(1<<30)), upd("ctr-2", true, cpuShares(1)))),
			sp("10-b", stop(upd("ctr-1", true, cpuset("0")))),
			sp("20-nil", nil),
		}},
		{name: "stopping-container-may-be-updated", plugins: []plug[stopRsp]{
			sp("00-a", stop(upd(ctrID, false, memLimit(1<<30)))),
		}},
		{name: "conflict", plugins: []plug[stopRsp]{
			sp("00-a", stop(upd("ctr-1", false, hugepage("1GB", 1<<30)))),
			sp("10-b", stop(upd("ctr-1", false, hugepage("1GB", 2<<30)))),
		}, wantErr: conflictMsg("10-b", "00-a", "HugepageLimits", "1GB")},
		{name: "pids", plugins: []plug[stopRsp]{
			sp("00-a", stop(upd("ctr-1", false, pids(5)))),
		}, deviation: "the pids limit of an update is applied (classic drops it)",
			fix: func(c *outcome) { c.updates[0].Linux.Resources.Pids = &nriv1beta1.LinuxPids{Limit: 5} }},
		{name: "evictions", plugins: []plug[stopRsp]{
			sp("00-a", &nriv1beta1.StopContainerResponse{Evict: []*nriv1beta1.ContainerEviction{evict("ctr-1", "a")}}),
		}, deviation: "evictions are passed on (classic's StopContainerResponse cannot even carry them)",
			fix: func(c *outcome) { c.evict = []*nriv1beta1.ContainerEviction{evict("ctr-1", "a")} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctr := baseContainer()
			classic := classicStop(t, testPod, ctr, tc.plugins)
			ours := oursStop(t, testPod, ctr, tc.plugins)
			runDifferential(t, classic, ours, tc.wantErr, tc.deviation, tc.fix, "", nil)
		})
	}
}
