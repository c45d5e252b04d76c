package conformance_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

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
	cur *attachment
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
	ctx, cancel := context.WithCancel(context.Background())
	a := &attachment{e: e, cancel: cancel, pods: pods, ctrs: ctrs, done: make(chan struct{})}
	deadline := time.Now().Add(conformance.Wait)
	for {
		stream, err := e.client.Attach(ctx)
		if err == nil {
			a.stream = stream
			err = a.hello()
		}
		if err == nil {
			break
		}
		// The server may still be dropping the previous attachment.
		if status.Code(err) != codes.AlreadyExists || time.Now().After(deadline) {
			cancel()
			t.Fatalf("attaching the runtime: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	go a.serve()
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
	if a == nil {
		return
	}
	a.sendMu.Lock()
	_ = a.stream.CloseSend()
	a.sendMu.Unlock()
	select {
	case <-a.done:
	case <-time.After(conformance.Wait):
	}
	a.cancel()
}

// attachment is one Attach stream: it answers snapshot requests with the
// state and applies updates.
type attachment struct {
	e      *adaptationEnv
	stream grpc.BidiStreamingClient[nriv1beta1.AttachRequest, nriv1beta1.AttachResponse]
	cancel context.CancelFunc
	sendMu sync.Mutex
	pods   []*nriv1beta1.PodSandbox
	ctrs   []*nriv1beta1.Container
	done   chan struct{}
}

func (a *attachment) send(m *nriv1beta1.AttachRequest) error {
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	return a.stream.Send(m)
}

func (a *attachment) hello() error {
	o := a.e.o
	if err := a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Hello{Hello: &nriv1beta1.AttachHello{
		RuntimeName: o.RuntimeName, RuntimeVersion: o.RuntimeVersion, NodeName: "conformance-node",
	}}}); err != nil {
		return err
	}
	m, err := a.stream.Recv()
	if err != nil {
		return err
	}
	if m.GetAttached() == nil {
		return errors.New("the first Attach answer is not Attached")
	}
	return nil
}

// serve answers the server until the stream ends.
func (a *attachment) serve() {
	defer close(a.done)
	for {
		m, err := a.stream.Recv()
		if err != nil {
			return // io.EOF once the server dropped the attachment
		}
		switch {
		case m.GetSnapshotRequest() != nil:
			_ = a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Snapshot{Snapshot: &nriv1beta1.StateSnapshot{
				RequestId: m.GetSnapshotRequest().GetRequestId(), Pods: a.pods, Containers: a.ctrs,
			}}})
		case m.GetApplyUpdates() != nil:
			au := m.GetApplyUpdates()
			fu, fe := a.e.apply(au.GetPlugin(), au.GetUpdate(), au.GetEvict())
			_ = a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_UpdateResult{UpdateResult: &nriv1beta1.UpdateResult{
				RequestId: au.GetRequestId(), Failed: fu, FailedEvictions: fe,
			}}})
		}
	}
}

func TestAdaptation(t *testing.T) { conformance.Run(t, adaptation) }
