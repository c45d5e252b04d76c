// Command go is the conformance executor of the Go SDK (package plugin):
// a plugin that answers every call it receives with the answer of the
// conformance harness's driver, so that the scenario catalog of
// test/conformance runs through the SDK (docs/CONFORMANCE.md).
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/plugin"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance executor:", err)
		os.Exit(1)
	}
}

func run() error {
	driver := os.Getenv("NRI_CONFORMANCE_DRIVER")
	if driver == "" {
		return errors.New("NRI_CONFORMANCE_DRIVER is not set")
	}
	reg := &nriv1beta1.RegisterPluginRequest{}
	if err := protojson.Unmarshal([]byte(os.Getenv("NRI_CONFORMANCE_REGISTRATION")), reg); err != nil {
		return fmt.Errorf("NRI_CONFORMANCE_REGISTRATION: %w", err)
	}
	cc, err := grpc.NewClient("unix://"+driver, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()

	opts := []plugin.Option{
		plugin.WithName(reg.GetPluginName()),
		plugin.WithIndex(reg.GetPluginIdx()),
		plugin.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	}
	c := reg.GetCapabilities()
	if n := c.GetMaxConcurrentCalls(); n != 0 {
		opts = append(opts, plugin.WithMaxConcurrentCalls(n))
	}
	if n := c.GetMaxMessageSize(); n != 0 {
		opts = append(opts, plugin.WithMaxMessageSize(n))
	}
	if c.GetDryRun() {
		opts = append(opts, plugin.WithDryRun())
	}
	if c.GetResync() {
		opts = append(opts, plugin.WithResync())
	}
	if t := reg.GetTimeouts(); t != nil {
		pt := plugin.Timeouts{Request: t.GetRequest().AsDuration(), Synchronize: t.GetSynchronize().AsDuration()}
		for _, et := range t.GetEvents() {
			if pt.Events == nil {
				pt.Events = map[nriv1beta1.Event]time.Duration{}
			}
			pt.Events[et.GetEvent()] = et.GetTimeout().AsDuration()
		}
		opts = append(opts, plugin.WithTimeouts(pt))
	}
	if sels := reg.GetSelectors(); len(sels) > 0 {
		opts = append(opts, plugin.WithSelectors(sels...))
	}
	if reg.GetStatus() != nriv1beta1.PluginStatus_PLUGIN_STATUS_UNSPECIFIED || reg.GetStatusReason() != "" {
		opts = append(opts, plugin.WithStatus(reg.GetStatus(), reg.GetStatusReason()))
	}
	p, err := plugin.New(&forwarder{d: nriv1beta1.NewPluginServiceClient(cc)}, opts...)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go commands(ctx, p, os.Stdin, os.Stdout)
	if err := p.Run(ctx); err != nil && !errors.Is(err, plugin.ErrReplaced) {
		return err
	}
	return nil
}

// forwarder implements every handler by calling the driver.
type forwarder struct {
	d nriv1beta1.PluginServiceClient
}

// out is the outgoing context of a forwarded call: the incoming call's
// deadline and cancellation, and its instance id.
func out(ctx context.Context) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(nri.MetadataInstanceID); len(v) > 0 {
		return metadata.AppendToOutgoingContext(ctx, nri.MetadataInstanceID, v[0])
	}
	return ctx
}

func (f *forwarder) Configure(ctx context.Context, req *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	return f.d.Configure(out(ctx), req)
}

func (f *forwarder) Synchronize(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	return f.d.Synchronize(out(ctx), req)
}

func (f *forwarder) Shutdown(ctx context.Context, req *nriv1beta1.ShutdownRequest) {
	_, _ = f.d.Shutdown(out(ctx), req)
}

func (f *forwarder) RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest) (*nriv1beta1.RunPodSandboxResponse, error) {
	return f.d.RunPodSandbox(out(ctx), req)
}

func (f *forwarder) UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest) (*nriv1beta1.UpdatePodSandboxResponse, error) {
	return f.d.UpdatePodSandbox(out(ctx), req)
}

func (f *forwarder) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) (*nriv1beta1.PostUpdatePodSandboxResponse, error) {
	return f.d.PostUpdatePodSandbox(out(ctx), req)
}

func (f *forwarder) StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest) (*nriv1beta1.StopPodSandboxResponse, error) {
	return f.d.StopPodSandbox(out(ctx), req)
}

func (f *forwarder) RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest) (*nriv1beta1.RemovePodSandboxResponse, error) {
	return f.d.RemovePodSandbox(out(ctx), req)
}

func (f *forwarder) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	return f.d.CreateContainer(out(ctx), req)
}

func (f *forwarder) PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest) (*nriv1beta1.PostCreateContainerResponse, error) {
	return f.d.PostCreateContainer(out(ctx), req)
}

func (f *forwarder) StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest) (*nriv1beta1.StartContainerResponse, error) {
	return f.d.StartContainer(out(ctx), req)
}

func (f *forwarder) PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest) (*nriv1beta1.PostStartContainerResponse, error) {
	return f.d.PostStartContainer(out(ctx), req)
}

func (f *forwarder) UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
	return f.d.UpdateContainer(out(ctx), req)
}

func (f *forwarder) PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest) (*nriv1beta1.PostUpdateContainerResponse, error) {
	return f.d.PostUpdateContainer(out(ctx), req)
}

func (f *forwarder) StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
	return f.d.StopContainer(out(ctx), req)
}

func (f *forwarder) RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest) (*nriv1beta1.RemoveContainerResponse, error) {
	return f.d.RemoveContainer(out(ctx), req)
}

func (f *forwarder) ValidateContainerAdjustment(ctx context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
	return f.d.ValidateContainerAdjustment(out(ctx), req)
}

// commands runs the harness's commands (docs/CONFORMANCE.md, "Commands"):
// one per line of in, "<id>\tset_status\t<STATUS>\t<reason>" or
// "<id>\trequest_resync\t<reason>", each made through the SDK's own API
// and answered with one line on out.
func commands(ctx context.Context, p *plugin.Plugin, in io.Reader, out io.Writer) {
	var mu sync.Mutex
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		go func() {
			v, err := command(ctx, p, f)
			line := "nri-conformance-reply\t" + f[0] + "\tok\t" + v + "\n"
			if err != nil {
				line = "nri-conformance-reply\t" + f[0] + "\terror\t" + strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
			}
			mu.Lock()
			defer mu.Unlock()
			_, _ = io.WriteString(out, line)
		}()
	}
}

// command runs one command once the SDK holds its registration (the
// harness sends it after the server answered; the SDK may not have read the
// answer yet).
func command(ctx context.Context, p *plugin.Plugin, f []string) (string, error) {
	if _, err := p.WaitRegistered(ctx); err != nil {
		return "", err
	}
	switch {
	case len(f) == 4 && f[1] == "set_status":
		st, ok := nriv1beta1.PluginStatus_value[f[2]]
		if !ok {
			return "", fmt.Errorf("unknown status %q", f[2])
		}
		return "", p.SetStatus(ctx, nriv1beta1.PluginStatus(st), f[3])
	case len(f) == 3 && f[1] == "request_resync":
		epoch, err := p.RequestResync(ctx, f[2])
		return strconv.FormatUint(epoch, 10), err
	}
	return "", fmt.Errorf("unknown command %q", strings.Join(f[1:], " "))
}
