package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// synthOpts describe synthetic pods and containers (dry-run, simulate).
type synthOpts struct {
	name        string
	namespace   string
	image       string
	annotations kvFlag
	labels      kvFlag
	env         kvFlag
}

func (o *synthOpts) register(fs *flag.FlagSet, name string) {
	fs.StringVar(&o.name, "name", name, "name of the synthetic pod")
	fs.StringVar(&o.namespace, "namespace", "default", "namespace of the synthetic pod")
	fs.StringVar(&o.image, "image", "registry.example.com/nrictl/synthetic:latest", "image of the synthetic containers")
	fs.Var(&o.annotations, "annotation", "annotation key=value of the synthetic pod and containers (repeatable)")
	fs.Var(&o.labels, "label", "label key=value of the synthetic pod and containers (repeatable)")
	fs.Var(&o.env, "env", "environment variable NAME=value of the synthetic containers (repeatable)")
}

// newID returns a fresh id that says where it came from.
func newID(kind string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "nrictl-" + kind + "-" + hex.EncodeToString(b)
}

func (o *synthOpts) pod(name string) *nriv1beta1.PodSandbox {
	uid := newID("uid")
	labels := map[string]string{
		"io.kubernetes.pod.name":      name,
		"io.kubernetes.pod.namespace": o.namespace,
		"io.kubernetes.pod.uid":       uid,
	}
	maps.Copy(labels, o.labels.m())
	return &nriv1beta1.PodSandbox{
		Id:          newID("pod"),
		Name:        name,
		Uid:         uid,
		Namespace:   o.namespace,
		Labels:      labels,
		Annotations: o.annotations.m(),
		Linux: &nriv1beta1.LinuxPodSandbox{
			CgroupParent: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid + ".slice",
			PodResources: &nriv1beta1.LinuxResources{
				Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(256 << 20)},
				Cpu:    &nriv1beta1.LinuxCPU{Shares: wrapperspb.UInt64(102)},
			},
		},
	}
}

func (o *synthOpts) container(pod *nriv1beta1.PodSandbox, name string) *nriv1beta1.Container {
	id := newID("ctr")
	labels := map[string]string{
		"io.kubernetes.container.name": name,
		"io.kubernetes.pod.name":       pod.GetName(),
		"io.kubernetes.pod.namespace":  pod.GetNamespace(),
		"io.kubernetes.pod.uid":        pod.GetUid(),
	}
	maps.Copy(labels, o.labels.m())
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=" + pod.GetName()}
	for _, k := range o.env.keys {
		env = append(env, k+"="+o.env.vals[k])
	}
	return &nriv1beta1.Container{
		Id:           id,
		PodSandboxId: pod.GetId(),
		Name:         name,
		State:        nriv1beta1.ContainerState_CONTAINER_STATE_CREATED,
		Labels:       labels,
		Annotations:  o.annotations.m(),
		Args:         []string{"/bin/sh", "-c", "sleep infinity"},
		Env:          env,
		Linux: &nriv1beta1.LinuxContainer{
			Resources: &nriv1beta1.LinuxResources{
				Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(128 << 20)},
				Cpu:    &nriv1beta1.LinuxCPU{Shares: wrapperspb.UInt64(102), Period: wrapperspb.UInt64(100000)},
			},
			CgroupsPath: pod.GetLinux().GetCgroupParent() + ":cri-containerd:" + id,
		},
		Image: &nriv1beta1.Image{Name: o.image},
	}
}

// readJSON reads a protojson file ("-" is standard input) into m.
func readJSON(path string, m proto.Message) error {
	var (
		b   []byte
		err error
	)
	if path == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return err
	}
	if err := protojson.Unmarshal(b, m); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
