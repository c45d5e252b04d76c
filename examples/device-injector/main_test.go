package main

import (
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/plugin/plugintest"
)

func TestDeviceInjector(t *testing.T) {
	env := plugintest.New(t)
	log := plugintest.TestLogger(t, slog.LevelInfo)
	env.Start(t, &injector{log: log}, plugin.WithName("device-injector"), plugin.WithIndex("10"))

	pod := plugintest.Pod(0)
	pod.Annotations[DevicesKey+"/container.app-0"] = `
- path: /dev/nri-null
  type: c
  major: 1
  minor: 3
  file_mode: 0660
  uid: 0
`
	pod.Annotations[DevicesKey+"/pod"] = `
- {path: /dev/pod-wide, type: c, major: 1, minor: 5}
`
	pod.Annotations[MountsKey] = `
- source: /srv/shared
  destination: /shared
  type: bind
  options: [rbind, ro]
`
	pod.Annotations[CDIDevicesKey+"/container.app-1"] = `
- vendor.com/gpu=0
- vendor.com/gpu=1
`
	env.RunPodSandbox(t, pod)

	// app-0 has its own device annotation; mounts apply pod-wide.
	adj := env.CreateContainer(t, pod, plugintest.Container(0, 0)).GetAdjust()
	devs := adj.GetLinux().GetDevices()
	// uid: 0 is no uid, as in classic NRI's sample.
	if len(devs) != 1 || devs[0].GetPath() != "/dev/nri-null" || devs[0].GetMajor() != 1 || devs[0].GetMinor() != 3 ||
		devs[0].GetFileMode().GetValue() != 0o660 || devs[0].GetUid() != nil || devs[0].GetGid() != nil {
		t.Errorf("app-0 devices: %v", devs)
	}
	if m := adj.GetMounts(); len(m) != 1 || m[0].GetDestination() != "/shared" || m[0].GetSource() != "/srv/shared" {
		t.Errorf("app-0 mounts: %v", m)
	}
	if len(adj.GetCdiDevices()) != 0 {
		t.Errorf("app-0 got CDI devices meant for app-1: %v", adj.GetCdiDevices())
	}

	// app-1 falls back to the pod-wide devices and gets its CDI devices.
	adj = env.CreateContainer(t, pod, plugintest.Container(0, 1)).GetAdjust()
	if devs := adj.GetLinux().GetDevices(); len(devs) != 1 || devs[0].GetPath() != "/dev/pod-wide" {
		t.Errorf("app-1 devices: %v", devs)
	}
	var cdi []string
	for _, d := range adj.GetCdiDevices() {
		cdi = append(cdi, d.GetName())
	}
	if strings.Join(cdi, ",") != "vendor.com/gpu=0,vendor.com/gpu=1" {
		t.Errorf("app-1 CDI devices: %v", cdi)
	}

	// A pod without annotations is left alone.
	plain := plugintest.Pod(1)
	env.RunPodSandbox(t, plain)
	if adj := env.CreateContainer(t, plain, plugintest.Container(1, 0)).GetAdjust(); len(adj.GetMounts()) != 0 || adj.GetLinux() != nil {
		t.Errorf("unannotated container adjusted: %v", adj)
	}
}

func TestDeviceInjectorBadAnnotationVetoes(t *testing.T) {
	env := plugintest.New(t)
	env.Start(t, &injector{log: plugintest.TestLogger(t, slog.LevelInfo)}, plugin.WithName("device-injector"))
	for _, bad := range []string{
		"- path: dev/relative\n  type: c\n",
		"- path: /dev/x\n  type: z\n",
		"not: [a, list",
	} {
		pod := plugintest.Pod(0)
		pod.Annotations[DevicesKey] = bad
		env.RunPodSandbox(t, pod)
		_, err := env.TryCreateContainer(t, pod, plugintest.Container(0, 0))
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "10-device-injector") ||
			!strings.Contains(err.Error(), DevicesKey) {
			t.Errorf("annotation %q: %v; want a veto by 10-device-injector naming the annotation", bad, err)
		}
	}
}

func TestDeviceConversion(t *testing.T) {
	d, err := device{Path: "/dev/x", Type: "b", Major: 8, Minor: 1, FileMode: 0o600}.toNRI()
	if err != nil {
		t.Fatal(err)
	}
	want := &nriv1beta1.LinuxDevice{Path: "/dev/x", Type: "b", Major: 8, Minor: 1}
	if d.GetPath() != want.GetPath() || d.GetFileMode().GetValue() != 0o600 || d.GetUid() != nil {
		t.Errorf("toNRI = %v", d)
	}
}

// TestSameAdjustmentAsClassicSample: for the annotations of classic NRI's
// sample pod (containerd/nri plugins/device-injector,
// sample-device-inject.yaml), with an explicit "uid: 0, gid: 0,
// file_mode: 0" and an I/O priority added, each container gets the
// adjustment classic NRI's device-injector gives it — so the same OCI
// spec: a file mode, uid or gid of 0 is left out (the runtime's default),
// the I/O priority is set for every container, an unknown I/O priority
// class sets none.
func TestSameAdjustmentAsClassicSample(t *testing.T) {
	env := plugintest.New(t)
	env.Start(t, &injector{log: plugintest.TestLogger(t, slog.LevelInfo)}, plugin.WithName("device-injector"), plugin.WithIndex("10"))
	pod := plugintest.Pod(0)
	pod.Annotations[DevicesKey+"/container.app-0"] = `
- path: /dev/nri-null
  type: c
  major: 1
  minor: 3
  uid: 0
  gid: 0
  file_mode: 0
`
	pod.Annotations[DevicesKey+"/container.app-1"] = `
- path: /dev/nri-zero
  type: c
  major: 1
  minor: 5
`
	pod.Annotations[MountsKey+"/container.app-2"] = `
- source: /home
  destination: /host-home
  type: bind
  options:
  - bind
  - ro
`
	pod.Annotations[IOPriorityKey] = `
class: IOPRIO_CLASS_RT
priority: 3
`
	env.RunPodSandbox(t, pod)
	prio := &nriv1beta1.LinuxIOPriority{Class: nriv1beta1.IOPrioClass_IO_PRIO_CLASS_RT, Priority: 3}
	want := map[int]*nriv1beta1.ContainerAdjustment{
		0: {Linux: &nriv1beta1.LinuxContainerAdjustment{IoPriority: prio,
			Devices: []*nriv1beta1.LinuxDevice{{Path: "/dev/nri-null", Type: "c", Major: 1, Minor: 3}}}},
		1: {Linux: &nriv1beta1.LinuxContainerAdjustment{IoPriority: prio,
			Devices: []*nriv1beta1.LinuxDevice{{Path: "/dev/nri-zero", Type: "c", Major: 1, Minor: 5}}}},
		2: {Mounts: []*nriv1beta1.Mount{{Source: "/home", Destination: "/host-home", Type: "bind", Options: []string{"bind", "ro"}}},
			Linux: &nriv1beta1.LinuxContainerAdjustment{IoPriority: prio}},
	}
	for c, w := range want {
		got := env.CreateContainer(t, pod, plugintest.Container(0, c)).GetAdjust()
		if !proto.Equal(got, w) {
			t.Errorf("app-%d: adjustment\n%v\nwant (classic NRI's device-injector)\n%v", c, got, w)
		}
	}

	unknown := plugintest.Pod(1)
	unknown.Annotations[IOPriorityKey] = "class: IOPRIO_CLASS_FAST\npriority: 1\n"
	env.RunPodSandbox(t, unknown)
	if adj := env.CreateContainer(t, unknown, plugintest.Container(1, 0)).GetAdjust(); adj.GetLinux().GetIoPriority() != nil {
		t.Errorf("an unknown I/O priority class set %v", adj.GetLinux().GetIoPriority())
	}
}
