package bench

import (
	"fmt"

	api "github.com/containerd/nri/pkg/api"
	"google.golang.org/protobuf/encoding/protowire"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// The workload is internal/fixture: Kubernetes-like pods and containers, a
// CreateContainerRequest of about 5.5 kB. Classic requests are the same
// messages converted through their shared wire format.

type vtMessage interface {
	MarshalVT() ([]byte, error)
	UnmarshalVT([]byte) error
}

func convert[T vtMessage](in vtMessage, out T) T {
	b, err := in.MarshalVT()
	if err != nil {
		panic(fmt.Sprintf("encoding %T: %v", in, err))
	}
	if err := out.UnmarshalVT(b); err != nil {
		panic(fmt.Sprintf("decoding %T as %T: %v", in, out, err))
	}
	return out
}

func alphaPod(p *nriv1beta1.PodSandbox) *api.PodSandbox { return convert(p, &api.PodSandbox{}) }
func alphaCtr(c *nriv1beta1.Container) *api.Container   { return convert(c, &api.Container{}) }

// podContainer is the pod and container number n of a workload: every n is
// a pod of its own.
func podContainer(n int) (*nriv1beta1.PodSandbox, *nriv1beta1.Container) {
	return fixture.Pod(n), fixture.Container(n, 0)
}

// updateResources is the resource update the lifecycle's UpdateContainer
// asks for.
func updateResources(c *nriv1beta1.Container) *nriv1beta1.LinuxResources {
	r := c.GetLinux().GetResources().CloneVT()
	if r == nil {
		r = &nriv1beta1.LinuxResources{}
	}
	if r.Cpu == nil {
		r.Cpu = &nriv1beta1.LinuxCPU{}
	}
	r.Cpu.Cpus = "0-1"
	return r
}

// state is N existing containers, two per pod, kept encoded so that each
// side decodes its own objects right before its run and nothing else stays
// alive in between.
type state struct {
	pods, ctrs [][]byte
	// size is what the state encodes to as the repeated fields of one
	// SynchronizeRequest: the floor of what synchronizing it must encode.
	size int
}

func newState(containers int) *state {
	s := &state{}
	add := func(list *[][]byte, m vtMessage) {
		b, err := m.MarshalVT()
		if err != nil {
			panic(err)
		}
		*list = append(*list, b)
		s.size += 1 + protowire.SizeVarint(uint64(len(b))) + len(b)
	}
	for n := 0; n*2 < containers; n++ {
		add(&s.pods, fixture.Pod(n))
		for c := 0; c < 2 && n*2+c < containers; c++ {
			add(&s.ctrs, fixture.Container(n, c))
		}
	}
	return s
}

func decodeAll[T vtMessage](list [][]byte, mk func() T) []T {
	out := make([]T, len(list))
	for i, b := range list {
		out[i] = mk()
		if err := out[i].UnmarshalVT(b); err != nil {
			panic(err)
		}
	}
	return out
}

func (s *state) beta() ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container) {
	return decodeAll(s.pods, func() *nriv1beta1.PodSandbox { return &nriv1beta1.PodSandbox{} }),
		decodeAll(s.ctrs, func() *nriv1beta1.Container { return &nriv1beta1.Container{} })
}

func (s *state) alpha() ([]*api.PodSandbox, []*api.Container) {
	return decodeAll(s.pods, func() *api.PodSandbox { return &api.PodSandbox{} }),
		decodeAll(s.ctrs, func() *api.Container { return &api.Container{} })
}
