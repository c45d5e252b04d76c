package conformance_test

import (
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// adaptationEnv drives the server as a remote runtime does: the entry
// points go over a gRPC AdaptationService client to the server's socket,
// and the runtime's state and unsolicited updates over an Attach stream.
type adaptationEnv struct {
	*base
	client nriv1beta1.AdaptationServiceClient
	rt     conformance.Runtime

	mu  sync.Mutex
	cur *conformance.Attachment
}

// adaptation is the setup of the AdaptationService path.
func adaptation(t conformance.T, o conformance.Options) (conformance.Env, error) {
	b, err := newBase(t, o)
	if err != nil {
		return nil, err
	}
	cc, err := grpc.NewClient("unix://"+b.sock, grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	client := nriv1beta1.NewAdaptationServiceClient(cc)
	e := &adaptationEnv{base: b, client: client, rt: conformance.AdaptationRuntime(client)}
	t.Cleanup(e.detach)
	e.SetState(t, nil, nil)
	return e, nil
}

func (e *adaptationEnv) Runtime() conformance.Runtime { return e.rt }

// SetState attaches the runtime with the given state. An attached runtime
// first detaches (a runtime restart), so the server resynchronizes its
// plugins.
func (e *adaptationEnv) SetState(t conformance.T, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) {
	t.Helper()
	e.detach()
	a, err := conformance.AttachRuntime(e.client, &nriv1beta1.AttachHello{
		RuntimeName: e.o.RuntimeName, RuntimeVersion: e.o.RuntimeVersion, NodeName: "conformance-node",
	}, e.o, pods, ctrs, e.applied)
	if err != nil {
		t.Fatalf("attaching the runtime: %v", err)
	}
	e.mu.Lock()
	e.cur = a
	e.mu.Unlock()
	e.waitAttached(t)
}

// detach ends the current attachment, if any, and waits until the server
// has dropped it.
func (e *adaptationEnv) detach() {
	e.mu.Lock()
	a := e.cur
	e.cur = nil
	e.mu.Unlock()
	if a != nil {
		a.Detach()
	}
}

func TestAdaptation(t *testing.T) { conformance.Run(t, adaptation) }
