package nri

// gRPC metadata keys of the protocol (docs/PROTOCOL.md).
const (
	// MetadataInstanceID carries the instance id a call is addressed to: the
	// server sends it on every call to a plugin, a plugin sends it on
	// RuntimeService.UpdateContainers. A plugin refuses calls addressed to
	// another instance.
	MetadataInstanceID = "nri-instance-id"
	// MetadataNodeName carries the server's node name on every call to a
	// plugin.
	MetadataNodeName = "nri-node-name"
	// MetadataRuntimeName carries the runtime's name on every call to a
	// plugin.
	MetadataRuntimeName = "nri-runtime-name"
	// MetadataSimulate marks an AdaptationService call as part of a
	// simulated lifecycle (nrictl simulate sends "1"). The server refuses
	// simulated calls while a real runtime is attached.
	MetadataSimulate = "nri-simulate"
	// MetadataWatch is the response header AdminService.WatchEvents sends
	// once the watch is in place: every event dispatched after the client
	// has read the header is seen by the watch.
	MetadataWatch = "nri-watch"
)
