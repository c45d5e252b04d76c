package main

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// The conformance.Setup of `nritest runtime --adaptation`: the scenarios
// drive an NRI server someone else runs (a running nrid) as a remote
// runtime does, over its AdaptationService (the entry points, and the
// runtime's state and unsolicited updates over an Attach stream), and
// start their test plugins (internal/testplugin) on its RuntimeService
// socket with endpoints in its plugin socket directory. This mirrors the
// AdaptationService path of test/conformance (adaptation_test.go) with a
// server that is not the setup's own: scenarios that configure the server
// (options other than the defaults) or stop it are skipped.

// remoteConfig is where the server under test is.
type remoteConfig struct {
	adaptation   string // AdaptationService socket
	pluginSocket string // RuntimeService socket
	pluginDir    string // the server's plugin socket directory
}

// remoteSetup returns the setup for the server of c.
func remoteSetup(c remoteConfig) conformance.Setup {
	return func(t conformance.T, o conformance.Options) (conformance.Env, error) {
		if !reflect.DeepEqual(o, conformance.Options{}.WithDefaults()) {
			t.Skip("the scenario configures the server (timeouts, validator, policy, metrics or runtime failures); the server under test has its operator's configuration")
		}
		cc, err := grpc.NewClient("unix://"+c.adaptation, grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cc.Close() })
		client := nriv1beta1.NewAdaptationServiceClient(cc)
		e := &remoteEnv{c: c, o: o, client: client, calls: conformance.NewCallLog(), applied: conformance.NewAppliedLog()}
		t.Cleanup(e.detach)
		e.SetState(t, nil, nil)
		return e, nil
	}
}

// remoteEnv is one scenario's env on the server under test.
type remoteEnv struct {
	c       remoteConfig
	o       conformance.Options
	client  nriv1beta1.AdaptationServiceClient
	calls   *conformance.CallLog
	applied *conformance.AppliedLog

	mu  sync.Mutex
	cur *conformance.Attachment
}

func (e *remoteEnv) Runtime() conformance.Runtime     { return conformance.AdaptationRuntime(e.client) }
func (e *remoteEnv) Log() *conformance.CallLog        { return e.calls }
func (e *remoteEnv) Applied() *conformance.AppliedLog { return e.applied }

// Shutdown cannot stop a server nritest does not run (the scenario that
// needs it is skipped).
func (e *remoteEnv) Shutdown(context.Context) error {
	return errors.New("nritest runtime cannot stop the server under test")
}

// SetState attaches the runtime with the given state; an attached runtime
// first detaches (a runtime restart: the server resynchronizes plugins).
func (e *remoteEnv) SetState(t conformance.T, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) {
	t.Helper()
	e.detach()
	deadline := time.Now().Add(conformance.Wait)
	a, err := conformance.AttachRuntime(e.client, &nriv1beta1.AttachHello{
		RuntimeName: e.o.RuntimeName, RuntimeVersion: e.o.RuntimeVersion, NodeName: "nritest-node",
	}, e.o, pods, ctrs, e.applied)
	if err != nil {
		t.Fatalf("attaching the runtime: %v", err)
	}
	e.mu.Lock()
	e.cur = a
	e.mu.Unlock()
	// The server asks for the snapshot right after Attached and uses it
	// once it has it: wait for that.
	select {
	case <-a.SnapshotSent():
	case <-time.After(conformance.Wait):
		t.Fatal("the server did not ask the attached runtime for its state")
	}
	if err := e.waitAttached(deadline); err != nil {
		t.Fatal(err)
	}
}

// waitAttached waits until the server uses the attached runtime's state.
// The runtime has no message for it; nrid's simulation guard tells: a
// simulated call is refused with FAILED_PRECONDITION while a runtime is
// attached. The probe is an invalid RemovePodSandbox (no pod), which
// reaches no plugin when it is let through. A server without the guard
// (INVALID_ARGUMENT after the deadline) is taken as attached.
func (e *remoteEnv) waitAttached(deadline time.Time) error {
	ctx := metadata.AppendToOutgoingContext(context.Background(), nri.MetadataSimulate, "1")
	for {
		cctx, cancel := context.WithTimeout(ctx, conformance.Wait)
		_, err := e.client.RemovePodSandbox(cctx, &nriv1beta1.AdaptationServiceRemovePodSandboxRequest{})
		cancel()
		switch code := status.Code(err); {
		case code == codes.FailedPrecondition:
			return nil
		case code != codes.InvalidArgument && code != codes.OK:
			return fmt.Errorf("probing the attachment: %w", err)
		case time.Now().After(deadline):
			return nil
		}
		timer := time.NewTimer(2 * time.Millisecond) // probe pacing
		<-timer.C
	}
}

// detach ends the current attachment, if any.
func (e *remoteEnv) detach() {
	e.mu.Lock()
	a := e.cur
	e.cur = nil
	e.mu.Unlock()
	if a != nil {
		a.Detach()
	}
}

func (e *remoteEnv) StartPlugin(t conformance.T, spec *conformance.PluginSpec) conformance.Plugin {
	t.Helper()
	p, err := e.TryStartPlugin(t, spec)
	if err != nil {
		t.Fatalf("starting plugin %s: %v", spec.Full(), err)
	}
	return p
}

func (e *remoteEnv) TryStartPlugin(t conformance.T, spec *conformance.PluginSpec) (conformance.Plugin, error) {
	// The next scenario may register the same name: once this one has
	// stopped the plugin (the cleanup StartTestPlugin registers, which runs
	// first), wait until its registration is over.
	var p *conformance.TestPlugin
	t.Cleanup(func() {
		if p != nil {
			select {
			case <-p.Done():
			case <-time.After(conformance.Wait):
			}
		}
	})
	p, err := conformance.StartTestPlugin(t, spec, e.calls, e.c.pluginSocket, e.c.pluginDir)
	if err != nil {
		return nil, err
	}
	return p, nil
}
