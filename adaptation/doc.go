// Package adaptation is a drop-in for github.com/containerd/nri's
// pkg/adaptation (v0.12.5): a container runtime that imports it instead of
// upstream's package, with no other change, embeds nri-grpc's server in its
// own process.
//
// The exported API is upstream's: New with a SyncFn and an UpdateFn, the
// Option functions (WithSocketPath, WithPluginPath, WithPluginConfigPath,
// WithDisabledExternalConnections, WithDefaultValidator, WithBuiltinPlugins,
// WithMetrics, WithTTRPCOptions, WithDeprecationRecorder),
// SetPluginRegistrationTimeout and SetPluginRequestTimeout, Start and Stop,
// BlockPluginSync and the thirteen event methods. Every data type is an
// alias of upstream's pkg/api type, so a runtime that mixes api.X and
// adaptation.X values compiles unchanged.
//
// Behind that API the runtime serves, on the paths its users already
// configure:
//
//   - classic ttrpc plugins on the classic socket (WithSocketPath), both the
//     v0.12 dedicated RPCs and older plugins that only implement StateChange
//     (reported through the DeprecationRecorder);
//   - pre-launched classic plugins from the plugin path with their
//     configuration from the plugin configuration path;
//   - builtin plugins and upstream's default validator, in process;
//   - gRPC v1beta1 plugins on nri-grpc's socket, with everything nrid offers
//     there (authentication and policy, event selectors, plugin status,
//     failure policy, tracing, metrics, dry runs, the AdminService), set up
//     from one nri-grpc configuration file: the file WithConfigFile names,
//     else the file the NRI_GRPC_CONFIG environment variable names, else
//     nrid's defaults.
//
// Classic and gRPC plugins are ordered together by index and merged by the
// same server nrid runs; an event costs one encoding of the runtime's
// request (pkg/api and nri-grpc's v1beta1 number their fields alike, so the
// request's bytes are the v1beta1 request's), not a hop.
//
// What differs from upstream, deliberately, is written down in
// docs/embedding.md: WASM plugins of the plugin path run sandboxed (a
// memory limit, no host filesystem or network, a timeout that stops a
// looping module; docs/wasm.md) and are loaded again when they die, BlockPluginSync has nothing to hold back (plugins
// are synchronized from the server's own record of the events, never by
// calling the runtime's SyncFn again), and the runtime's SyncFn is called
// once, at Start.
package adaptation
