package plugin

import (
	"context"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
)

// The handler interfaces. A plugin implements only those it needs; New
// derives the event subscription from them, as classic NRI's stub does.
// Every handler gets the request the server sent, typed, and returns the
// typed response; a nil response is sent as an empty one.
//
// Errors: on a creating event (RunPodSandbox, UpdatePodSandbox,
// CreateContainer, StartContainer, UpdateContainer) any error is a veto. A
// gRPC status error (status.Error, or an error wrapping one) reaches the
// server with its code and message; context.DeadlineExceeded and
// context.Canceled become DEADLINE_EXCEEDED and CANCELLED (which the server
// treats as "not available", not as a veto); any other error becomes
// FAILED_PRECONDITION with the error's text. The server prefixes the message
// with the plugin's name. On notification and teardown events the same
// conversion applies, and the error is only recorded. A validator's error is
// a rejection (see ValidateContainerAdjustmentInterface). A panicking handler
// answers INTERNAL.

// ConfigureInterface handles Configure. Implement it to read the plugin's
// configuration (ConfigureRequest.config, the drop-in file of a pre-launched
// plugin) and the server's identity.
//
// The returned ConfigureResponse may narrow the event subscription
// (Events; 0 keeps the subscription derived from the implemented
// interfaces, and bits for events the plugin does not implement fail
// Configure) and override the failure policy (FailurePolicy; nil keeps the
// one of WithFailurePolicy). A nil response keeps both.
type ConfigureInterface interface {
	// Configure is called once per registration, before Synchronize.
	Configure(ctx context.Context, req *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error)
}

// SynchronizeInterface handles Synchronize. The SDK collects the pages of a
// split synchronization and calls Synchronize once, with every pod and
// container of the runtime in one request (More is false). The response may
// carry updates and evictions of existing containers; its More field is
// ignored.
//
// Synchronize is also called for resynchronizations (epoch 2 and up) when
// the plugin declared the resync capability with WithResync and does not
// implement ResyncInterface.
type SynchronizeInterface interface {
	// Synchronize hands the plugin the full state of the runtime.
	Synchronize(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error)
}

// ResyncInterface handles resynchronizations: the runtime restarted or
// reattached and its state was read again. Implementing it declares the
// resync capability. Resync is called, like Synchronize, once with the full
// state, for every epoch above 1; the plugin should replace its view of the
// state with the request's. The initial synchronization (epoch 1) still goes
// to Synchronize, if implemented.
//
// A plugin without the resync capability learns about a resync through
// synthesized StopContainer, RemoveContainer, StopPodSandbox and
// RemovePodSandbox events for what vanished, if it subscribed to them.
type ResyncInterface interface {
	// Resync hands the plugin the full new state of the runtime.
	Resync(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error)
}

// ShutdownInterface handles Shutdown: the server tells the plugin why its
// registration ends (req.Kind and req.Reason). Answer quickly. After
// SHUTDOWN_KIND_REPLACED the plugin does not register again and Run returns
// ErrReplaced; after any other kind it registers again, with backoff.
type ShutdownInterface interface {
	// Shutdown is called before the server closes the registration.
	Shutdown(ctx context.Context, req *nriv1beta1.ShutdownRequest)
}

// DryRunner is implemented by plugins whose handlers honour the dry_run
// flag of CreateContainerRequest and UpdateContainerRequest (no side
// effects). When SupportsDryRun returns true the plugin declares the
// dry_run capability, as WithDryRun does.
type DryRunner interface {
	// SupportsDryRun reports whether the plugin handles dry runs.
	SupportsDryRun() bool
}

// RunPodSandboxInterface handles RunPodSandbox (creating: an error vetoes
// the pod).
type RunPodSandboxInterface interface {
	// RunPodSandbox is called before a pod sandbox is created.
	RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest) (*nriv1beta1.RunPodSandboxResponse, error)
}

// UpdatePodSandboxInterface handles UpdatePodSandbox (creating: an error
// vetoes the update).
type UpdatePodSandboxInterface interface {
	// UpdatePodSandbox is called before a pod's resources are updated.
	UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest) (*nriv1beta1.UpdatePodSandboxResponse, error)
}

// PostUpdatePodSandboxInterface handles PostUpdatePodSandbox (notification).
type PostUpdatePodSandboxInterface interface {
	// PostUpdatePodSandbox is called after a pod's resources were updated.
	PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) (*nriv1beta1.PostUpdatePodSandboxResponse, error)
}

// StopPodSandboxInterface handles StopPodSandbox (teardown).
type StopPodSandboxInterface interface {
	// StopPodSandbox is called when a pod sandbox is stopped.
	StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest) (*nriv1beta1.StopPodSandboxResponse, error)
}

// RemovePodSandboxInterface handles RemovePodSandbox (teardown).
type RemovePodSandboxInterface interface {
	// RemovePodSandbox is called when a pod sandbox is removed.
	RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest) (*nriv1beta1.RemovePodSandboxResponse, error)
}

// CreateContainerInterface handles CreateContainer (creating: an error
// vetoes the creation). The response may adjust the container (see
// Adjustment), update other containers (see Update) and evict containers.
type CreateContainerInterface interface {
	// CreateContainer is called before a container is created.
	CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error)
}

// PostCreateContainerInterface handles PostCreateContainer (notification).
type PostCreateContainerInterface interface {
	// PostCreateContainer is called after a container was created.
	PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest) (*nriv1beta1.PostCreateContainerResponse, error)
}

// StartContainerInterface handles StartContainer (creating: an error vetoes
// the start).
type StartContainerInterface interface {
	// StartContainer is called before a container is started.
	StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest) (*nriv1beta1.StartContainerResponse, error)
}

// PostStartContainerInterface handles PostStartContainer (notification).
type PostStartContainerInterface interface {
	// PostStartContainer is called after a container was started.
	PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest) (*nriv1beta1.PostStartContainerResponse, error)
}

// UpdateContainerInterface handles UpdateContainer (creating: an error
// vetoes the update). An update of the target container in the response
// alters the pending update.
type UpdateContainerInterface interface {
	// UpdateContainer is called before a container's resources are updated.
	UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error)
}

// PostUpdateContainerInterface handles PostUpdateContainer (notification).
type PostUpdateContainerInterface interface {
	// PostUpdateContainer is called after a container's resources were
	// updated.
	PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest) (*nriv1beta1.PostUpdateContainerResponse, error)
}

// StopContainerInterface handles StopContainer (teardown). The response may
// update other containers, for example to hand back freed resources.
type StopContainerInterface interface {
	// StopContainer is called when a container is stopped.
	StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error)
}

// RemoveContainerInterface handles RemoveContainer (teardown).
type RemoveContainerInterface interface {
	// RemoveContainer is called when a container is removed.
	RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest) (*nriv1beta1.RemoveContainerResponse, error)
}

// ValidateContainerAdjustmentInterface makes the plugin a validator: it is
// called, concurrently with other validators, with the merged result of
// every container creation. Return a response with Reject set, or simply an
// error, to reject the creation: any error becomes a rejection whose reason
// is the error's text (its status message for a gRPC status). A nil
// response with a nil error accepts.
//
// Validators fail closed: a validator that times out or is unavailable
// fails the creation too, whatever its failure policy.
type ValidateContainerAdjustmentInterface interface {
	// ValidateContainerAdjustment is called after the other plugins
	// adjusted a container being created.
	ValidateContainerAdjustment(ctx context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error)
}

// handlers are the implemented handlers of a plugin, nil when not
// implemented.
type handlers struct {
	configure            func(context.Context, *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error)
	synchronize          func(context.Context, *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error)
	resync               func(context.Context, *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error)
	shutdown             func(context.Context, *nriv1beta1.ShutdownRequest)
	runPodSandbox        func(context.Context, *nriv1beta1.RunPodSandboxRequest) (*nriv1beta1.RunPodSandboxResponse, error)
	updatePodSandbox     func(context.Context, *nriv1beta1.UpdatePodSandboxRequest) (*nriv1beta1.UpdatePodSandboxResponse, error)
	postUpdatePodSandbox func(context.Context, *nriv1beta1.PostUpdatePodSandboxRequest) (*nriv1beta1.PostUpdatePodSandboxResponse, error)
	stopPodSandbox       func(context.Context, *nriv1beta1.StopPodSandboxRequest) (*nriv1beta1.StopPodSandboxResponse, error)
	removePodSandbox     func(context.Context, *nriv1beta1.RemovePodSandboxRequest) (*nriv1beta1.RemovePodSandboxResponse, error)
	createContainer      func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error)
	postCreateContainer  func(context.Context, *nriv1beta1.PostCreateContainerRequest) (*nriv1beta1.PostCreateContainerResponse, error)
	startContainer       func(context.Context, *nriv1beta1.StartContainerRequest) (*nriv1beta1.StartContainerResponse, error)
	postStartContainer   func(context.Context, *nriv1beta1.PostStartContainerRequest) (*nriv1beta1.PostStartContainerResponse, error)
	updateContainer      func(context.Context, *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error)
	postUpdateContainer  func(context.Context, *nriv1beta1.PostUpdateContainerRequest) (*nriv1beta1.PostUpdateContainerResponse, error)
	stopContainer        func(context.Context, *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error)
	removeContainer      func(context.Context, *nriv1beta1.RemoveContainerRequest) (*nriv1beta1.RemoveContainerResponse, error)
	validate             func(context.Context, *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error)
}

// setup finds the handlers p implements and the event mask they make.
func setup(p any) (handlers, int32) {
	var (
		h    handlers
		mask int32
	)
	set := func(e nriv1beta1.Event) { mask |= nri.EventMask(e) }
	if x, ok := p.(ConfigureInterface); ok {
		h.configure = x.Configure
	}
	if x, ok := p.(SynchronizeInterface); ok {
		h.synchronize = x.Synchronize
	}
	if x, ok := p.(ResyncInterface); ok {
		h.resync = x.Resync
	}
	if x, ok := p.(ShutdownInterface); ok {
		h.shutdown = x.Shutdown
	}
	if x, ok := p.(RunPodSandboxInterface); ok {
		h.runPodSandbox = x.RunPodSandbox
		set(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX)
	}
	if x, ok := p.(UpdatePodSandboxInterface); ok {
		h.updatePodSandbox = x.UpdatePodSandbox
		set(nriv1beta1.Event_EVENT_UPDATE_POD_SANDBOX)
	}
	if x, ok := p.(PostUpdatePodSandboxInterface); ok {
		h.postUpdatePodSandbox = x.PostUpdatePodSandbox
		set(nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX)
	}
	if x, ok := p.(StopPodSandboxInterface); ok {
		h.stopPodSandbox = x.StopPodSandbox
		set(nriv1beta1.Event_EVENT_STOP_POD_SANDBOX)
	}
	if x, ok := p.(RemovePodSandboxInterface); ok {
		h.removePodSandbox = x.RemovePodSandbox
		set(nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX)
	}
	if x, ok := p.(CreateContainerInterface); ok {
		h.createContainer = x.CreateContainer
		set(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
	}
	if x, ok := p.(PostCreateContainerInterface); ok {
		h.postCreateContainer = x.PostCreateContainer
		set(nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER)
	}
	if x, ok := p.(StartContainerInterface); ok {
		h.startContainer = x.StartContainer
		set(nriv1beta1.Event_EVENT_START_CONTAINER)
	}
	if x, ok := p.(PostStartContainerInterface); ok {
		h.postStartContainer = x.PostStartContainer
		set(nriv1beta1.Event_EVENT_POST_START_CONTAINER)
	}
	if x, ok := p.(UpdateContainerInterface); ok {
		h.updateContainer = x.UpdateContainer
		set(nriv1beta1.Event_EVENT_UPDATE_CONTAINER)
	}
	if x, ok := p.(PostUpdateContainerInterface); ok {
		h.postUpdateContainer = x.PostUpdateContainer
		set(nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER)
	}
	if x, ok := p.(StopContainerInterface); ok {
		h.stopContainer = x.StopContainer
		set(nriv1beta1.Event_EVENT_STOP_CONTAINER)
	}
	if x, ok := p.(RemoveContainerInterface); ok {
		h.removeContainer = x.RemoveContainer
		set(nriv1beta1.Event_EVENT_REMOVE_CONTAINER)
	}
	if x, ok := p.(ValidateContainerAdjustmentInterface); ok {
		h.validate = x.ValidateContainerAdjustment
		set(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT)
	}
	return h, mask
}
