package adaptation

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"

	"github.com/containerd/nri/pkg/adaptation/builtin"
	"github.com/containerd/nri/pkg/api"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
)

// registerBuiltin registers upstream builtin plugin b with srv as an
// in-process plugin; it returns once b is configured and synchronized.
func registerBuiltin(ctx context.Context, srv *server.Server, b *builtin.BuiltinPlugin) (*server.Handle, error) {
	if b == nil {
		return nil, fmt.Errorf("builtin plugin is nil")
	}
	if b.Index == "" || b.Base == "" {
		return nil, fmt.Errorf("builtin plugin without index or name (%q, %q)", b.Index, b.Base)
	}
	h, err := srv.RegisterInProcess(ctx, server.Registration{
		Name:  b.Base,
		Index: b.Index,
		// The runtime's own identity: builtin plugins are its code.
		Identity: "uid:" + strconv.Itoa(os.Geteuid()),
		Kind:     nriv1beta1.PluginKind_PLUGIN_KIND_IN_PROCESS,
		Endpoint: "builtin",
		// In process: no message limit but the server's own, and one
		// Synchronize however large the state (builtinConn collects pages).
		Capabilities: &nriv1beta1.Capabilities{MaxMessageSize: math.MaxUint32},
	}, &builtinConn{p: b})
	if err != nil {
		return nil, fmt.Errorf("failed to start builtin NRI plugin %q: %w", b.Index+"-"+b.Base, err)
	}
	return h, nil
}

// builtinConn serves the server's calls of an upstream builtin plugin:
// every request is converted to pkg/api by its encoding, and the answer
// back.
type builtinConn struct {
	nriv1beta1.UnimplementedPluginServiceServer
	p *builtin.BuiltinPlugin

	mu    sync.Mutex
	pods  []*api.PodSandbox // the pages of a split Synchronize so far
	pctrs []*api.Container
}

// relay calls f with req converted to pkg/api and converts its answer to
// v1beta1.
func relay[Rsp any, PRsp interface {
	*Rsp
	decoder
}, AReq any, PAReq interface {
	*AReq
	decoder
}, ARsp vtMessage](ctx context.Context, req vtMessage, f func(context.Context, PAReq) (ARsp, error)) (PRsp, error) {
	in, err := convert[AReq, PAReq](req)
	if err != nil {
		return nil, err
	}
	out, err := f(ctx, in)
	if err != nil {
		return nil, err
	}
	return convert[Rsp, PRsp](out)
}

// Configure implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) Configure(ctx context.Context, req *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	return relay[nriv1beta1.ConfigureResponse](ctx, req, c.p.Configure)
}

// Synchronize implements nriv1beta1.PluginServiceServer. Builtin plugins
// predate split synchronization: the pages are collected and the plugin
// called once, with the whole state.
func (c *builtinConn) Synchronize(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	page, err := convert[api.SynchronizeRequest](req)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.pods = append(c.pods, page.Pods...)
	c.pctrs = append(c.pctrs, page.Containers...)
	if req.GetMore() {
		c.mu.Unlock()
		return &nriv1beta1.SynchronizeResponse{More: true}, nil
	}
	whole := &api.SynchronizeRequest{Pods: c.pods, Containers: c.pctrs}
	c.pods, c.pctrs = nil, nil
	c.mu.Unlock()
	rsp, err := c.p.Synchronize(ctx, whole)
	if err != nil {
		return nil, err
	}
	return convert[nriv1beta1.SynchronizeResponse](rsp)
}

// Shutdown implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) Shutdown(ctx context.Context, _ *nriv1beta1.ShutdownRequest) (*nriv1beta1.ShutdownResponse, error) {
	if _, err := c.p.Shutdown(ctx, &api.ShutdownRequest{}); err != nil {
		return nil, err
	}
	return &nriv1beta1.ShutdownResponse{}, nil
}

// RunPodSandbox implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest) (*nriv1beta1.RunPodSandboxResponse, error) {
	return relay[nriv1beta1.RunPodSandboxResponse](ctx, req, c.p.RunPodSandbox)
}

// UpdatePodSandbox implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest) (*nriv1beta1.UpdatePodSandboxResponse, error) {
	return relay[nriv1beta1.UpdatePodSandboxResponse](ctx, req, c.p.UpdatePodSandbox)
}

// PostUpdatePodSandbox implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) (*nriv1beta1.PostUpdatePodSandboxResponse, error) {
	return relay[nriv1beta1.PostUpdatePodSandboxResponse](ctx, req, c.p.PostUpdatePodSandbox)
}

// StopPodSandbox implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest) (*nriv1beta1.StopPodSandboxResponse, error) {
	return relay[nriv1beta1.StopPodSandboxResponse](ctx, req, c.p.StopPodSandbox)
}

// RemovePodSandbox implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest) (*nriv1beta1.RemovePodSandboxResponse, error) {
	return relay[nriv1beta1.RemovePodSandboxResponse](ctx, req, c.p.RemovePodSandbox)
}

// CreateContainer implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	return relay[nriv1beta1.CreateContainerResponse](ctx, req, c.p.CreateContainer)
}

// PostCreateContainer implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest) (*nriv1beta1.PostCreateContainerResponse, error) {
	return relay[nriv1beta1.PostCreateContainerResponse](ctx, req, c.p.PostCreateContainer)
}

// StartContainer implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest) (*nriv1beta1.StartContainerResponse, error) {
	return relay[nriv1beta1.StartContainerResponse](ctx, req, c.p.StartContainer)
}

// PostStartContainer implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest) (*nriv1beta1.PostStartContainerResponse, error) {
	return relay[nriv1beta1.PostStartContainerResponse](ctx, req, c.p.PostStartContainer)
}

// UpdateContainer implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
	return relay[nriv1beta1.UpdateContainerResponse](ctx, req, c.p.UpdateContainer)
}

// PostUpdateContainer implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest) (*nriv1beta1.PostUpdateContainerResponse, error) {
	return relay[nriv1beta1.PostUpdateContainerResponse](ctx, req, c.p.PostUpdateContainer)
}

// StopContainer implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
	return relay[nriv1beta1.StopContainerResponse](ctx, req, c.p.StopContainer)
}

// RemoveContainer implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest) (*nriv1beta1.RemoveContainerResponse, error) {
	return relay[nriv1beta1.RemoveContainerResponse](ctx, req, c.p.RemoveContainer)
}

// ValidateContainerAdjustment implements nriv1beta1.PluginServiceServer.
func (c *builtinConn) ValidateContainerAdjustment(ctx context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
	return relay[nriv1beta1.ValidateContainerAdjustmentResponse](ctx, req, c.p.ValidateContainerAdjustment)
}
