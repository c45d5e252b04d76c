//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criTimeout bounds one CRI call.
const criTimeout = 60 * time.Second

// Pod is a pod sandbox created through CRI.
type Pod struct {
	ID     string
	Name   string
	Config *runtimeapi.PodSandboxConfig
}

// RunPod creates a host-network pod sandbox named name (unique within the
// scenario) whose cgroup parent is under the scenario's cgroup.
func (e *Env) RunPod(name string) *Pod {
	e.tb.Helper()
	return e.RunPodAnnotated(name, nil)
}

// RunPodAnnotated is RunPod with extra pod annotations.
func (e *Env) RunPodAnnotated(name string, annotations map[string]string) *Pod {
	e.tb.Helper()
	p, err := e.tryRunPod(name, annotations)
	if err != nil {
		e.tb.Fatalf("RunPodSandbox %s: %v", name, err)
	}
	return p
}

// TryRunPod is RunPod returning the error.
func (e *Env) TryRunPod(name string) (*Pod, error) { return e.tryRunPod(name, nil) }

// TryRunPodWith is TryRunPod with the pod's configuration changed by edit
// before it is sent (namespace, labels...).
func (e *Env) TryRunPodWith(name string, edit func(*runtimeapi.PodSandboxConfig)) (*Pod, error) {
	return e.tryRunPodEdit(name, nil, edit)
}

func (e *Env) tryRunPod(name string, annotations map[string]string) (*Pod, error) {
	return e.tryRunPodEdit(name, annotations, nil)
}

func (e *Env) tryRunPodEdit(name string, annotations map[string]string, edit func(*runtimeapi.PodSandboxConfig)) (*Pod, error) {
	ann := map[string]string{"e2e/pod": name}
	for k, v := range annotations {
		ann[k] = v
	}
	uid := fmt.Sprintf("%s-%s-uid", e.Name, name)
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "e2e", Uid: uid},
		LogDirectory: filepath.Join(e.Logs, "pods", name),
		Labels:       map[string]string{"app": "nri-e2e"},
		Annotations:  ann,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: e.Cgroup + "/" + uid,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				// Host network (no CNI), own PID namespace per container.
				// No hostname: a host-network pod shares the host's UTS namespace.
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network: runtimeapi.NamespaceMode_NODE,
					Pid:     runtimeapi.NamespaceMode_CONTAINER,
					Ipc:     runtimeapi.NamespaceMode_POD,
				},
			},
		},
	}
	if edit != nil {
		edit(cfg)
	}
	ctx, cancel := ctxT(criTimeout)
	defer cancel()
	r, err := e.CRI.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		return nil, err
	}
	return &Pod{ID: r.GetPodSandboxId(), Name: name, Config: cfg}, nil
}

// ContainerConfig is the workload container named name: /sleeper blocking,
// FROM_CRI=yes, cpu shares 512 and a 64 MiB memory limit.
func ContainerConfig(name string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: name},
		Image:       &runtimeapi.ImageSpec{Image: SleeperImage},
		Command:     []string{"/sleeper"},
		Args:        []string{"workload"},
		Envs:        []*runtimeapi.KeyValue{{Key: "FROM_CRI", Value: []byte("yes")}},
		Labels:      map[string]string{"role": "workload"},
		Annotations: map[string]string{"e2e/container": name},
		LogPath:     name + ".log",
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 512, MemoryLimitInBytes: 64 << 20},
		},
	}
}

// TryCreate creates container name in pod and returns its id or the error.
func (e *Env) TryCreate(pod *Pod, name string) (string, error) {
	ctx, cancel := ctxT(criTimeout)
	defer cancel()
	r, err := e.CRI.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: pod.ID, Config: ContainerConfig(name), SandboxConfig: pod.Config,
	})
	if err != nil {
		return "", err
	}
	return r.GetContainerId(), nil
}

// Create creates container name in pod.
func (e *Env) Create(pod *Pod, name string) string {
	e.tb.Helper()
	id, err := e.TryCreate(pod, name)
	if err != nil {
		e.tb.Fatalf("CreateContainer %s: %v", name, err)
	}
	return id
}

// Start starts a container and checks that it runs.
func (e *Env) Start(id string) {
	e.tb.Helper()
	ctx, cancel := ctxT(criTimeout)
	defer cancel()
	if _, err := e.CRI.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		e.tb.Fatalf("StartContainer %s: %v", id, err)
	}
	if st := e.Status(id).GetState(); st != runtimeapi.ContainerState_CONTAINER_RUNNING {
		e.tb.Fatalf("container %s is %v after StartContainer", id, st)
	}
}

// Run creates and starts container name in pod.
func (e *Env) Run(pod *Pod, name string) string {
	e.tb.Helper()
	id := e.Create(pod, name)
	e.Start(id)
	return id
}

// Status returns CRI's container status.
func (e *Env) Status(id string) *runtimeapi.ContainerStatus {
	e.tb.Helper()
	ctx, cancel := ctxT(criTimeout)
	defer cancel()
	r, err := e.CRI.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		e.tb.Fatalf("ContainerStatus %s: %v", id, err)
	}
	return r.GetStatus()
}

// Inspected is what CRI's verbose container status tells about a
// container: the OCI spec it was created with and its process.
type Inspected struct {
	Pid  int         `json:"pid"`
	Spec *rspec.Spec `json:"runtimeSpec"`
}

// Inspect returns the verbose status ("info") of a container.
func (e *Env) Inspect(id string) *Inspected {
	e.tb.Helper()
	ctx, cancel := ctxT(criTimeout)
	defer cancel()
	r, err := e.CRI.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		e.tb.Fatalf("ContainerStatus %s: %v", id, err)
	}
	var in Inspected
	if err := json.Unmarshal([]byte(r.GetInfo()["info"]), &in); err != nil || in.Spec == nil {
		e.tb.Fatalf("ContainerStatus %s: verbose info without runtimeSpec (%v): %q", id, err, r.GetInfo()["info"])
	}
	return &in
}

// StopRemove stops and removes a container.
func (e *Env) StopRemove(id string) {
	e.tb.Helper()
	ctx, cancel := ctxT(criTimeout)
	defer cancel()
	if _, err := e.CRI.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10}); err != nil {
		e.tb.Fatalf("StopContainer %s: %v", id, err)
	}
	if _, err := e.CRI.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		e.tb.Fatalf("RemoveContainer %s: %v", id, err)
	}
}

// StopRemovePod stops and removes a pod sandbox.
func (e *Env) StopRemovePod(p *Pod) {
	e.tb.Helper()
	ctx, cancel := ctxT(criTimeout)
	defer cancel()
	if _, err := e.CRI.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.ID}); err != nil {
		e.tb.Fatalf("StopPodSandbox %s: %v", p.Name, err)
	}
	if _, err := e.CRI.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.ID}); err != nil {
		e.tb.Fatalf("RemovePodSandbox %s: %v", p.Name, err)
	}
}

// SpecEnv returns the env of an OCI spec as a map.
func SpecEnv(s *rspec.Spec) map[string]string {
	out := map[string]string{}
	if s.Process != nil {
		for _, kv := range s.Process.Env {
			k, v, _ := strings.Cut(kv, "=")
			out[k] = v
		}
	}
	return out
}

// SpecMount returns the spec's mount at dst, or nil.
func SpecMount(s *rspec.Spec, dst string) *rspec.Mount {
	for i := range s.Mounts {
		if s.Mounts[i].Destination == dst {
			return &s.Mounts[i]
		}
	}
	return nil
}

// waitExec waits until the container's init process has executed the
// workload: StartContainer returns once runc told its init to go on, which
// may still be "runc init" (with runc's environment) for a moment, and
// during exec the kernel switches /proc/PID/exe before it sets up the new
// environment (an empty /proc/PID/environ for a moment).
func (e *Env) waitExec(pid int) {
	e.tb.Helper()
	exe := ""
	if !waitFor(30*time.Second, func() bool {
		exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		return filepath.Base(exe) == "sleeper" && strings.Contains(string(b), "PATH=")
	}) {
		e.tb.Fatalf("pid %d runs %q, not /sleeper with its environment", pid, exe)
	}
}

// ProcEnv returns the environment of a running process, read from
// /proc/PID/environ.
func (e *Env) ProcEnv(pid int) map[string]string {
	e.tb.Helper()
	e.waitExec(pid)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		e.tb.Fatalf("environment of pid %d: %v", pid, err)
	}
	out := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// ProcFile reads a file as the running container process sees it (through
// /proc/PID/root, in the container's mount namespace).
func (e *Env) ProcFile(pid int, path string) (string, error) {
	e.tb.Helper()
	e.waitExec(pid)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/root%s", pid, path))
	return string(b), err
}

// CgroupFile reads a file of the process's cgroup for a controller ("cpu",
// "memory"): the v1 hierarchy of that controller, else the unified one.
func (e *Env) CgroupFile(pid int, controller, file string) string {
	e.tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		e.tb.Fatalf("cgroup of pid %d: %v", pid, err)
	}
	defer f.Close()
	var v1, v2 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			v2 = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				v1 = parts[2]
			}
		}
	}
	for _, mp := range cgroupMountsFor(controller) {
		rel := v1
		if mp.v2 {
			rel = v2
		}
		if rel == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(mp.point, rel, file))
		if err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	e.tb.Fatalf("no cgroup file %s/%s for pid %d", controller, file, pid)
	return ""
}

type cgMount struct {
	point string
	v2    bool
}

// cgroupMountsFor returns the v1 mount of controller, then the v2 mount.
func cgroupMountsFor(controller string) []cgMount {
	var v1, v2 []cgMount
	for _, m := range mounts() {
		switch m.fstype {
		case "cgroup":
			for _, c := range strings.Split(m.super, ",") {
				if c == controller {
					v1 = append(v1, cgMount{point: m.point})
				}
			}
		case "cgroup2":
			v2 = append(v2, cgMount{point: m.point, v2: true})
		}
	}
	return append(v1, v2...)
}
