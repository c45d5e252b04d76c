// Package plugin is the Go SDK for nri-grpc plugins: NRI (the Node
// Resource Interface of containerd and CRI-O) over gRPC.
//
// A plugin is a value that implements some of the handler interfaces of
// this package, one per event (CreateContainerInterface,
// StopContainerInterface, ValidateContainerAdjustmentInterface, ...), and
// optionally ConfigureInterface, SynchronizeInterface, ResyncInterface and
// ShutdownInterface. New derives the event subscription from the
// implemented interfaces; Run does the rest of docs/PROTOCOL.md:
//
//   - it serves PluginService (and gRPC health and reflection) on the
//     plugin's unix socket, by default /var/run/nri/plugins/NN-name.sock;
//   - it authenticates every incoming call: only root and the uid of the
//     NRI server (learned from the peer credentials of the plugin's own
//     connection to the server) may call, unless WithDebugAccess;
//   - it refuses calls addressed to another instance (the nri-instance-id
//     metadata) with UNAVAILABLE, and accepts Configure only while its own
//     registration is pending;
//   - it registers (RuntimeService.RegisterPlugin), keeps the registration
//     session open, and registers again whenever the session ends (server
//     restart, eviction, broken connection), except after a Shutdown of kind
//     SHUTDOWN_KIND_REPLACED: while the server is away, as soon as its socket
//     accepts connections again (watched with inotify, polled every 50 ms);
//     while it serves and refuses, with exponential backoff and jitter;
//   - it collects the pages of a split Synchronize and calls the handler
//     once with the full state;
//   - it turns handler errors into gRPC statuses: a veto on creating events,
//     a rejection in validators (see the handler interfaces);
//   - it keeps the plugin's status (WithStatus, Plugin.SetStatus: READY,
//     NOT_READY, DEGRADED with a reason) across registrations, registering
//     again with the status last reported; Plugin.RequestResync asks for a
//     new Synchronize, which reaches the handler with reason
//     SYNC_REASON_PLUGIN_REQUESTED and the epoch RequestResync returned.
//
// A minimal plugin:
//
//	type injector struct{}
//
//	func (injector) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
//		return plugin.NewAdjustment().AddEnv("HELLO", req.GetContainer().GetName()).Response(), nil
//	}
//
//	func main() {
//		p, err := plugin.New(injector{}, plugin.WithName("hello"), plugin.WithIndex("10"))
//		if err != nil {
//			log.Fatal(err)
//		}
//		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//		defer stop()
//		if err := p.Run(ctx); err != nil && !errors.Is(err, plugin.ErrReplaced) {
//			log.Fatal(err)
//		}
//	}
//
// Options have one shape across nri-grpc (plugin.New, server.New,
// bridge.NewRuntimeSide, bridge.NewPluginSide): an Option is a func of an
// unexported options struct that only records its value. The constructor
// applies the options in order, validates them and returns an error naming
// the offending option ("plugin: WithBackoff: invalid bounds 0s, 1s").
// Options do not return errors themselves because most checks combine an
// option with others or with the environment (a TCP address needs WithTLS;
// NRI_GRPC_PLUGIN_NAME overrides WithName): they belong in the constructor
// anyway, and there they are all in one place.
//
// Event selectors: WithSelectors declares which pods and containers the
// plugin is about (namespaces, a Kubernetes label selector on the pod's
// labels, container-name globs, runtime handlers). The server then sends
// the plugin only their events and their Synchronize state, never waits
// for it on other pods' events, and requires a required plugin only for
// what it selects (docs/PROTOCOL.md §20). The selectors are sent at every
// (re-)registration; Selectors (or Registered().GetSelectors()) is what
// the server put in effect. Package selector checks and matches selectors
// with the server's own rules:
//
//	p, err := plugin.New(gpuHook{}, plugin.WithName("gpu-hook"), plugin.WithIndex("40"),
//		plugin.WithSelectors(&nriv1beta1.EventSelector{
//			Namespaces:      []string{"ml"},
//			PodLabels:       "gpu in (a100, h100)",
//			RuntimeHandlers: []string{"nvidia"},
//		}))
//
// Package nri holds what the SDK shares with the server: event masks
// (nri.EventMask, nri.ParseEventMask), the metadata keys, effective
// annotations (nri.EffectiveAnnotation) and reading dispatch failures.
//
// Adjustment and Update build adjustments and container updates with
// classic NRI's helper names and removal-marker conventions. Package
// plugintest runs a plugin against a real in-process server for tests.
// docs/go-plugin.md is the tutorial; docs/migrating-classic-plugins.md maps
// classic pkg/stub plugins to this SDK.
package plugin
