package adaptation

import (
	"github.com/containerd/nri/pkg/api"
)

// The data types, constants and helpers of pkg/adaptation v0.12.5, which are
// all pkg/api's: a runtime that mixes api.X and adaptation.X values (as
// containerd does) compiles unchanged against this package.

type (
	// RegisterPluginRequest is pkg/api's RegisterPluginRequest.
	RegisterPluginRequest = api.RegisterPluginRequest
	// RegisterPluginResponse is pkg/api's Empty.
	RegisterPluginResponse = api.Empty
	// UpdateContainersRequest is pkg/api's UpdateContainersRequest.
	UpdateContainersRequest = api.UpdateContainersRequest
	// UpdateContainersResponse is pkg/api's UpdateContainersResponse.
	UpdateContainersResponse = api.UpdateContainersResponse
	// ConfigureRequest is pkg/api's ConfigureRequest.
	ConfigureRequest = api.ConfigureRequest
	// ConfigureResponse is pkg/api's ConfigureResponse.
	ConfigureResponse = api.ConfigureResponse
	// SynchronizeRequest is pkg/api's SynchronizeRequest.
	SynchronizeRequest = api.SynchronizeRequest
	// SynchronizeResponse is pkg/api's SynchronizeResponse.
	SynchronizeResponse = api.SynchronizeResponse
	// ShutdownRequest is pkg/api's Empty.
	ShutdownRequest = api.Empty
	// ShutdownResponse is pkg/api's Empty.
	ShutdownResponse = api.Empty
	// CreateContainerRequest is pkg/api's CreateContainerRequest.
	CreateContainerRequest = api.CreateContainerRequest
	// CreateContainerResponse is pkg/api's CreateContainerResponse.
	CreateContainerResponse = api.CreateContainerResponse
	// UpdateContainerRequest is pkg/api's UpdateContainerRequest.
	UpdateContainerRequest = api.UpdateContainerRequest
	// UpdateContainerResponse is pkg/api's UpdateContainerResponse.
	UpdateContainerResponse = api.UpdateContainerResponse
	// StopContainerRequest is pkg/api's StopContainerRequest.
	StopContainerRequest = api.StopContainerRequest
	// StopContainerResponse is pkg/api's StopContainerResponse.
	StopContainerResponse = api.StopContainerResponse
	// StateChangeEvent is pkg/api's StateChangeEvent.
	StateChangeEvent = api.StateChangeEvent
	// StateChangeResponse is pkg/api's StateChangeResponse.
	StateChangeResponse = api.StateChangeResponse
	// RunPodSandboxRequest is pkg/api's RunPodSandboxRequest.
	RunPodSandboxRequest = api.RunPodSandboxRequest
	// RunPodSandboxResponse is pkg/api's RunPodSandboxResponse.
	RunPodSandboxResponse = api.RunPodSandboxResponse
	// UpdatePodSandboxRequest is pkg/api's UpdatePodSandboxRequest.
	UpdatePodSandboxRequest = api.UpdatePodSandboxRequest
	// UpdatePodSandboxResponse is pkg/api's UpdatePodSandboxResponse.
	UpdatePodSandboxResponse = api.UpdatePodSandboxResponse
	// StopPodSandboxRequest is pkg/api's StopPodSandboxRequest.
	StopPodSandboxRequest = api.StopPodSandboxRequest
	// StopPodSandboxResponse is pkg/api's StopPodSandboxResponse.
	StopPodSandboxResponse = api.StopPodSandboxResponse
	// RemovePodSandboxRequest is pkg/api's RemovePodSandboxRequest.
	RemovePodSandboxRequest = api.RemovePodSandboxRequest
	// RemovePodSandboxResponse is pkg/api's RemovePodSandboxResponse.
	RemovePodSandboxResponse = api.RemovePodSandboxResponse
	// PostUpdatePodSandboxRequest is pkg/api's PostUpdatePodSandboxRequest.
	PostUpdatePodSandboxRequest = api.PostUpdatePodSandboxRequest
	// PostUpdatePodSandboxResponse is pkg/api's PostUpdatePodSandboxResponse.
	PostUpdatePodSandboxResponse = api.PostUpdatePodSandboxResponse
	// StartContainerRequest is pkg/api's StartContainerRequest.
	StartContainerRequest = api.StartContainerRequest
	// StartContainerResponse is pkg/api's StartContainerResponse.
	StartContainerResponse = api.StartContainerResponse
	// RemoveContainerRequest is pkg/api's RemoveContainerRequest.
	RemoveContainerRequest = api.RemoveContainerRequest
	// RemoveContainerResponse is pkg/api's RemoveContainerResponse.
	RemoveContainerResponse = api.RemoveContainerResponse
	// PostCreateContainerRequest is pkg/api's PostCreateContainerRequest.
	PostCreateContainerRequest = api.PostCreateContainerRequest
	// PostCreateContainerResponse is pkg/api's PostCreateContainerResponse.
	PostCreateContainerResponse = api.PostCreateContainerResponse
	// PostStartContainerRequest is pkg/api's PostStartContainerRequest.
	PostStartContainerRequest = api.PostStartContainerRequest
	// PostStartContainerResponse is pkg/api's PostStartContainerResponse.
	PostStartContainerResponse = api.PostStartContainerResponse
	// PostUpdateContainerRequest is pkg/api's PostUpdateContainerRequest.
	PostUpdateContainerRequest = api.PostUpdateContainerRequest
	// PostUpdateContainerResponse is pkg/api's PostUpdateContainerResponse.
	PostUpdateContainerResponse = api.PostUpdateContainerResponse
	// ValidateContainerAdjustmentRequest is pkg/api's ValidateContainerAdjustmentRequest.
	ValidateContainerAdjustmentRequest = api.ValidateContainerAdjustmentRequest
	// ValidateContainerAdjustmentResponse is pkg/api's ValidateContainerAdjustmentResponse.
	ValidateContainerAdjustmentResponse = api.ValidateContainerAdjustmentResponse
	// PluginInstance is pkg/api's PluginInstance.
	PluginInstance = api.PluginInstance
	// PodSandbox is pkg/api's PodSandbox.
	PodSandbox = api.PodSandbox
	// LinuxPodSandbox is pkg/api's LinuxPodSandbox.
	LinuxPodSandbox = api.LinuxPodSandbox
	// Container is pkg/api's Container.
	Container = api.Container
	// ContainerAdjustment is pkg/api's ContainerAdjustment.
	ContainerAdjustment = api.ContainerAdjustment
	// LinuxContainerAdjustment is pkg/api's LinuxContainerAdjustment.
	LinuxContainerAdjustment = api.LinuxContainerAdjustment
	// ContainerUpdate is pkg/api's ContainerUpdate.
	ContainerUpdate = api.ContainerUpdate
	// LinuxContainerUpdate is pkg/api's LinuxContainerUpdate.
	LinuxContainerUpdate = api.LinuxContainerUpdate
	// ContainerEviction is pkg/api's ContainerEviction.
	ContainerEviction = api.ContainerEviction
	// ContainerState is pkg/api's ContainerState.
	ContainerState = api.ContainerState
	// KeyValue is pkg/api's KeyValue.
	KeyValue = api.KeyValue
	// Mount is pkg/api's Mount.
	Mount = api.Mount
	// LinuxContainer is pkg/api's LinuxContainer.
	LinuxContainer = api.LinuxContainer
	// LinuxNamespace is pkg/api's LinuxNamespace.
	LinuxNamespace = api.LinuxNamespace
	// LinuxResources is pkg/api's LinuxResources.
	LinuxResources = api.LinuxResources
	// LinuxCPU is pkg/api's LinuxCPU.
	LinuxCPU = api.LinuxCPU
	// LinuxMemory is pkg/api's LinuxMemory.
	LinuxMemory = api.LinuxMemory
	// LinuxMemoryPolicy is pkg/api's LinuxMemoryPolicy.
	LinuxMemoryPolicy = api.LinuxMemoryPolicy
	// LinuxDevice is pkg/api's LinuxDevice.
	LinuxDevice = api.LinuxDevice
	// LinuxDeviceCgroup is pkg/api's LinuxDeviceCgroup.
	LinuxDeviceCgroup = api.LinuxDeviceCgroup
	// LinuxIOPriority is pkg/api's LinuxIOPriority.
	LinuxIOPriority = api.LinuxIOPriority
	// LinuxSeccomp is pkg/api's LinuxSeccomp.
	LinuxSeccomp = api.LinuxSeccomp
	// LinuxNetDevice is pkg/api's LinuxNetDevice.
	LinuxNetDevice = api.LinuxNetDevice
	// LinuxScheduler is pkg/api's LinuxScheduler.
	LinuxScheduler = api.LinuxScheduler
	// LinuxSchedulerPolicy is pkg/api's LinuxSchedulerPolicy.
	LinuxSchedulerPolicy = api.LinuxSchedulerPolicy
	// LinuxSchedulerFlag is pkg/api's LinuxSchedulerFlag.
	LinuxSchedulerFlag = api.LinuxSchedulerFlag
	// LinuxRdt is pkg/api's LinuxRdt.
	LinuxRdt = api.LinuxRdt
	// CDIDevice is pkg/api's CDIDevice.
	CDIDevice = api.CDIDevice
	// HugepageLimit is pkg/api's HugepageLimit.
	HugepageLimit = api.HugepageLimit
	// Hooks is pkg/api's Hooks.
	Hooks = api.Hooks
	// Hook is pkg/api's Hook.
	Hook = api.Hook
	// POSIXRlimit is pkg/api's POSIXRlimit.
	POSIXRlimit = api.POSIXRlimit
	// SecurityProfile is pkg/api's SecurityProfile.
	SecurityProfile = api.SecurityProfile
	// User is pkg/api's User.
	User = api.User
	// Image is pkg/api's Image.
	Image = api.Image
	// Event is pkg/api's Event.
	Event = api.Event
	// EventMask is pkg/api's EventMask.
	EventMask = api.EventMask
	// FailurePolicy is pkg/api's FailurePolicy.
	FailurePolicy = api.FailurePolicy
)

const (
	// Event_UNKNOWN is pkg/api's Event_UNKNOWN.
	Event_UNKNOWN = api.Event_UNKNOWN
	// Event_RUN_POD_SANDBOX is pkg/api's Event_RUN_POD_SANDBOX.
	Event_RUN_POD_SANDBOX = api.Event_RUN_POD_SANDBOX
	// Event_UPDATE_POD_SANDBOX is pkg/api's Event_UPDATE_POD_SANDBOX.
	Event_UPDATE_POD_SANDBOX = api.Event_UPDATE_POD_SANDBOX
	// Event_POST_UPDATE_POD_SANDBOX is pkg/api's Event_POST_UPDATE_POD_SANDBOX.
	Event_POST_UPDATE_POD_SANDBOX = api.Event_POST_UPDATE_POD_SANDBOX
	// Event_STOP_POD_SANDBOX is pkg/api's Event_STOP_POD_SANDBOX.
	Event_STOP_POD_SANDBOX = api.Event_STOP_POD_SANDBOX
	// Event_REMOVE_POD_SANDBOX is pkg/api's Event_REMOVE_POD_SANDBOX.
	Event_REMOVE_POD_SANDBOX = api.Event_REMOVE_POD_SANDBOX
	// Event_CREATE_CONTAINER is pkg/api's Event_CREATE_CONTAINER.
	Event_CREATE_CONTAINER = api.Event_CREATE_CONTAINER
	// Event_POST_CREATE_CONTAINER is pkg/api's Event_POST_CREATE_CONTAINER.
	Event_POST_CREATE_CONTAINER = api.Event_POST_CREATE_CONTAINER
	// Event_START_CONTAINER is pkg/api's Event_START_CONTAINER.
	Event_START_CONTAINER = api.Event_START_CONTAINER
	// Event_POST_START_CONTAINER is pkg/api's Event_POST_START_CONTAINER.
	Event_POST_START_CONTAINER = api.Event_POST_START_CONTAINER
	// Event_UPDATE_CONTAINER is pkg/api's Event_UPDATE_CONTAINER.
	Event_UPDATE_CONTAINER = api.Event_UPDATE_CONTAINER
	// Event_POST_UPDATE_CONTAINER is pkg/api's Event_POST_UPDATE_CONTAINER.
	Event_POST_UPDATE_CONTAINER = api.Event_POST_UPDATE_CONTAINER
	// Event_STOP_CONTAINER is pkg/api's Event_STOP_CONTAINER.
	Event_STOP_CONTAINER = api.Event_STOP_CONTAINER
	// Event_REMOVE_CONTAINER is pkg/api's Event_REMOVE_CONTAINER.
	Event_REMOVE_CONTAINER = api.Event_REMOVE_CONTAINER
	// Event_VALIDATE_CONTAINER_ADJUSTMENT is pkg/api's Event_VALIDATE_CONTAINER_ADJUSTMENT.
	Event_VALIDATE_CONTAINER_ADJUSTMENT = api.Event_VALIDATE_CONTAINER_ADJUSTMENT
	// ValidEvents is pkg/api's ValidEvents.
	ValidEvents = api.ValidEvents
	// ContainerState_CONTAINER_UNKNOWN is pkg/api's ContainerState_CONTAINER_UNKNOWN.
	ContainerState_CONTAINER_UNKNOWN = api.ContainerState_CONTAINER_UNKNOWN
	// ContainerState_CONTAINER_CREATED is pkg/api's ContainerState_CONTAINER_CREATED.
	ContainerState_CONTAINER_CREATED = api.ContainerState_CONTAINER_CREATED
	// ContainerState_CONTAINER_PAUSED is pkg/api's ContainerState_CONTAINER_PAUSED.
	ContainerState_CONTAINER_PAUSED = api.ContainerState_CONTAINER_PAUSED
	// ContainerState_CONTAINER_RUNNING is pkg/api's ContainerState_CONTAINER_RUNNING.
	ContainerState_CONTAINER_RUNNING = api.ContainerState_CONTAINER_RUNNING
	// ContainerState_CONTAINER_STOPPED is pkg/api's ContainerState_CONTAINER_STOPPED.
	ContainerState_CONTAINER_STOPPED = api.ContainerState_CONTAINER_STOPPED
	// ContainerState_CONTAINER_EXITED is pkg/api's ContainerState_CONTAINER_STOPPED.
	ContainerState_CONTAINER_EXITED = api.ContainerState_CONTAINER_STOPPED
	// SecurityProfile_RUNTIME_DEFAULT is pkg/api's SecurityProfile_RUNTIME_DEFAULT.
	SecurityProfile_RUNTIME_DEFAULT = api.SecurityProfile_RUNTIME_DEFAULT
	// SecurityProfile_UNCONFINED is pkg/api's SecurityProfile_UNCONFINED.
	SecurityProfile_UNCONFINED = api.SecurityProfile_UNCONFINED
	// SecurityProfile_LOCALHOST is pkg/api's SecurityProfile_LOCALHOST.
	SecurityProfile_LOCALHOST = api.SecurityProfile_LOCALHOST
)

type (
	// OptionalString is pkg/api's OptionalString.
	OptionalString = api.OptionalString
	// OptionalInt is pkg/api's OptionalInt.
	OptionalInt = api.OptionalInt
	// OptionalInt32 is pkg/api's OptionalInt32.
	OptionalInt32 = api.OptionalInt32
	// OptionalUInt32 is pkg/api's OptionalUInt32.
	OptionalUInt32 = api.OptionalUInt32
	// OptionalInt64 is pkg/api's OptionalInt64.
	OptionalInt64 = api.OptionalInt64
	// OptionalUInt64 is pkg/api's OptionalUInt64.
	OptionalUInt64 = api.OptionalUInt64
	// OptionalBool is pkg/api's OptionalBool.
	OptionalBool = api.OptionalBool
	// OptionalFileMode is pkg/api's OptionalFileMode.
	OptionalFileMode = api.OptionalFileMode
)

var (
	// String is pkg/api's String.
	String = api.String
	// RepeatedString is pkg/api's RepeatedString.
	RepeatedString = api.RepeatedString
	// Int is pkg/api's Int.
	Int = api.Int
	// Int32 is pkg/api's Int32.
	Int32 = api.Int32
	// UInt32 is pkg/api's UInt32.
	UInt32 = api.UInt32
	// Int64 is pkg/api's Int64.
	Int64 = api.Int64
	// UInt64 is pkg/api's UInt64.
	UInt64 = api.UInt64
	// Bool is pkg/api's Bool.
	Bool = api.Bool
	// FileMode is pkg/api's FileMode.
	FileMode = api.FileMode
)

var (
	// FromOCIMounts is pkg/api's FromOCIMounts.
	FromOCIMounts = api.FromOCIMounts
	// FromOCIHooks is pkg/api's FromOCIHooks.
	FromOCIHooks = api.FromOCIHooks
	// FromOCILinuxNamespaces is pkg/api's FromOCILinuxNamespaces.
	FromOCILinuxNamespaces = api.FromOCILinuxNamespaces
	// FromOCILinuxDevices is pkg/api's FromOCILinuxDevices.
	FromOCILinuxDevices = api.FromOCILinuxDevices
	// FromOCILinuxResources is pkg/api's FromOCILinuxResources.
	FromOCILinuxResources = api.FromOCILinuxResources
	// FromOCILinuxIOPriority is pkg/api's FromOCILinuxIOPriority.
	FromOCILinuxIOPriority = api.FromOCILinuxIOPriority
	// DupStringSlice is pkg/api's DupStringSlice.
	DupStringSlice = api.DupStringSlice
	// DupStringMap is pkg/api's DupStringMap.
	DupStringMap = api.DupStringMap
	// IsMarkedForRemoval is pkg/api's IsMarkedForRemoval.
	IsMarkedForRemoval = api.IsMarkedForRemoval
	// MarkForRemoval is pkg/api's MarkForRemoval.
	MarkForRemoval = api.MarkForRemoval
)
