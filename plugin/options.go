package plugin

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/selector"
)

// Defaults and environment variables.
const (
	// DefaultServerAddress is nrid's default socket, as a gRPC target.
	DefaultServerAddress = "unix:///var/run/nri/nri-grpc.sock"
	// DefaultSocketDir is the directory of the default plugin endpoint
	// (NN-name.sock), nrid's default plugin socket directory.
	DefaultSocketDir = "/var/run/nri/plugins"

	// EnvPluginName, EnvPluginIndex, EnvServerAddress and EnvPluginEndpoint
	// are set by nrid for the plugins it launches (docs/PROTOCOL.md §14).
	// When set, they take precedence over the corresponding options: the
	// launcher's assignment is binding.
	EnvPluginName = "NRI_GRPC_PLUGIN_NAME"
	// EnvPluginIndex is the two-digit index assigned by the launcher.
	EnvPluginIndex = "NRI_GRPC_PLUGIN_IDX"
	// EnvServerAddress is nrid's socket, as a gRPC target or a bare path.
	EnvServerAddress = "NRI_GRPC_SERVER_ADDRESS"
	// EnvPluginEndpoint is the absolute path of the socket to listen on.
	EnvPluginEndpoint = "NRI_GRPC_PLUGIN_ENDPOINT"
)

// Option configures a Plugin; pass options to New. An option only records
// its value and never fails: New applies the options in order (a later one
// overrides an earlier one; nil options are ignored), then validates them
// together and returns an error that names the offending option, for
// example "plugin: WithBackoff: invalid bounds 0s, 1s". server.Option and
// the bridge's options have the same shape.
type Option func(*options)

// Timeouts are the call timeouts a plugin asks for. Zero values leave the
// server's defaults. The server caps them by policy; the effective values
// are in Registered.timeouts.
type Timeouts struct {
	// Request is the default timeout of one call.
	Request time.Duration
	// Events overrides Request per event.
	Events map[nriv1beta1.Event]time.Duration
	// Synchronize is the budget of a whole synchronization (all pages).
	Synchronize time.Duration
}

type options struct {
	name, index    string
	serverAddress  string
	endpoint       string
	socketDir      string
	tls            bool // WithTLS was given
	tlsDial        *tls.Config
	tlsServe       *tls.Config
	maxConcurrent  uint32
	maxMessageSize uint32
	dryRun, resync bool
	timeouts       *Timeouts
	failurePolicy  *nriv1beta1.FailurePolicy
	debugAccess    bool
	log            *slog.Logger
	pluginVersion  string
	backoffMin     time.Duration
	backoffMax     time.Duration
	updateTimeout  time.Duration
	status         nriv1beta1.PluginStatus // WithStatus (status.go)
	statusReason   string
	statusSet      bool
	selectors      []*nriv1beta1.EventSelector
}

// WithName sets the plugin name (characters from [a-zA-Z0-9_.+-]).
// NRI_GRPC_PLUGIN_NAME overrides it.
func WithName(name string) Option {
	return func(o *options) { o.name = name }
}

// WithIndex sets the plugin's two-digit index ("00" to "99"), which orders
// it among plugins. NRI_GRPC_PLUGIN_IDX overrides it. Without a name or an
// index, both are parsed from the binary's name when it is "NN-name", as in
// classic NRI.
func WithIndex(idx string) Option {
	return func(o *options) { o.index = idx }
}

// WithServerAddress sets nrid's address: a gRPC target ("unix:///path",
// "dns:///host:port") or an absolute socket path. The default is
// DefaultServerAddress; NRI_GRPC_SERVER_ADDRESS overrides it. TCP targets
// need WithTLS.
func WithServerAddress(addr string) Option {
	return func(o *options) { o.serverAddress = addr }
}

// WithEndpoint sets where the plugin serves PluginService: an absolute unix
// socket path (or "unix:///path"), or, with WithTLS, "dns:///host:port".
// The default is NN-name.sock in the socket directory (see WithSocketDir);
// NRI_GRPC_PLUGIN_ENDPOINT overrides it. Two processes cannot share one
// endpoint: start a new instance of a running plugin with another one.
func WithEndpoint(endpoint string) Option {
	return func(o *options) { o.endpoint = endpoint }
}

// WithSocketDir sets the directory of the default endpoint (default
// DefaultSocketDir). It must be nrid's plugin socket directory.
func WithSocketDir(dir string) Option {
	return func(o *options) { o.socketDir = dir }
}

// WithTLS enables TCP. dial is the client configuration used to reach nrid
// at a "dns:///host:port" address (the plugin's certificate and nrid's CA);
// serve is the server configuration of a "dns:///host:port" endpoint (the
// plugin's certificate, and the CA of nrid's client certificate in
// ClientCAs: unless WithDebugAccess is given, the SDK requires and verifies
// client certificates). Either may be nil when unused.
func WithTLS(dial, serve *tls.Config) Option {
	return func(o *options) { o.tls, o.tlsDial, o.tlsServe = true, dial, serve }
}

// WithMaxConcurrentCalls declares how many calls the plugin accepts at the
// same time (default 1). Handlers must then be safe for concurrent use;
// events of one pod are still delivered one at a time.
func WithMaxConcurrentCalls(n uint32) Option {
	return func(o *options) { o.maxConcurrent = n }
}

// WithMaxMessageSize declares the largest message the plugin accepts from
// the server (default and maximum 4 MiB; at least 64 KiB; 0 declares none,
// the default). Synchronize pages are sized to it.
func WithMaxMessageSize(n uint32) Option {
	return func(o *options) { o.maxMessageSize = n }
}

// WithDryRun declares that the plugin's handlers honour dry_run requests
// without side effects (see DryRunner).
func WithDryRun() Option {
	return func(o *options) { o.dryRun = true }
}

// WithResync declares that the plugin handles resynchronizations (see
// ResyncInterface): they go to Resync if implemented, else to Synchronize.
func WithResync() Option {
	return func(o *options) { o.resync = true }
}

// WithTimeouts asks for call timeouts. Timeouts must not be negative, and
// each entry of t.Events must name an event and be positive.
func WithTimeouts(t Timeouts) Option {
	t.Events = maps.Clone(t.Events)
	return func(o *options) { o.timeouts = &t }
}

// WithFailurePolicy asks for a failure policy: what the server does when
// the plugin is not available for a call (timeout, lost connection, ...).
// FailRequest makes the plugin required: creating events fail while it is
// unavailable. KeepConnected keeps it registered after a timeout. The
// operator's policy may override both. Verdicts are not affected: a
// handler's error on a creating event always vetoes it. A nil policy asks
// for none: the server's default applies.
func WithFailurePolicy(p *nriv1beta1.FailurePolicy) Option {
	var fp *nriv1beta1.FailurePolicy
	if p != nil {
		fp = &nriv1beta1.FailurePolicy{FailRequest: p.GetFailRequest(), KeepConnected: p.GetKeepConnected()}
	}
	return func(o *options) { o.failurePolicy = fp }
}

// WithDebugAccess lets any caller that can connect to the endpoint call the
// plugin, for example grpcurl run by a developer. By default only the
// server's uid and root may (and, on TCP, only clients with a verified
// certificate). Calls must still name the current instance id.
func WithDebugAccess() Option {
	return func(o *options) { o.debugAccess = true }
}

// WithLogger sets the logger (default, and for nil: text to standard
// error).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.log = l }
}

// WithPluginVersion sets the plugin's own version, shown by AdminService
// (`nrictl plugins -wide`). Without it the SDK reports the plugin binary's
// build: its main module's version ("v1.2.0", or the pseudo-version Go
// records from the VCS), or "devel+" and the commit it was built from
// (".dirty" with uncommitted changes); nothing when the build recorded
// neither (go run, -buildvcs=false).
func WithPluginVersion(v string) Option {
	return func(o *options) { o.pluginVersion = v }
}

// WithSelectors declares event selectors (docs/PROTOCOL.md, "Event
// selectors"): the plugin then receives the events, and the Synchronize
// state, of the pods and containers at least one selector matches, and
// nothing of the others; a required plugin is required only for what it
// selects. Pod events are matched on the pod (namespaces, pod_labels, a
// Kubernetes label selector, runtime_handlers), container events also on
// the container's name (container_names, globs with '*' and '?'). They are
// sent at every registration and re-registration; New checks them with
// the server's rules (package selector), and Registered().GetSelectors()
// (or Selectors) returns what the server put in effect. Without this option,
// or with no selector, the plugin receives everything. A later
// WithSelectors replaces an earlier one.
func WithSelectors(sels ...*nriv1beta1.EventSelector) Option {
	return func(o *options) {
		o.selectors = make([]*nriv1beta1.EventSelector, len(sels))
		for i, s := range sels {
			o.selectors[i] = proto.CloneOf(s)
		}
	}
}

// WithBackoff sets the bounds of the re-registration backoff: the delay
// starts at first and doubles up to limit, each delay drawn at random from
// its upper half (default 100ms to 10s). It applies while the server serves
// and refuses the registration; while the server is away, the plugin
// registers as soon as its socket accepts connections again. first must be
// positive and limit at least first.
func WithBackoff(first, limit time.Duration) Option {
	return func(o *options) { o.backoffMin, o.backoffMax = first, limit }
}

// check validates the options on their own; New checks how they combine
// with the environment (addresses that need WithTLS, names). Its errors
// name the option.
func (o *options) check() error {
	var errs []error
	if _, err := selector.Compile(o.selectors); err != nil {
		errs = append(errs, fmt.Errorf("WithSelectors: %w", err))
	}
	if o.tls && o.tlsDial == nil && o.tlsServe == nil {
		errs = append(errs, errors.New("WithTLS: both configurations are nil"))
	}
	if n := o.maxMessageSize; n != 0 && n < 64<<10 {
		errs = append(errs, fmt.Errorf("WithMaxMessageSize: %d is below 65536 bytes", n))
	}
	if t := o.timeouts; t != nil {
		if t.Request < 0 || t.Synchronize < 0 {
			errs = append(errs, fmt.Errorf("WithTimeouts: negative timeout (request %v, synchronize %v)", t.Request, t.Synchronize))
		}
		for _, e := range slices.Sorted(maps.Keys(t.Events)) {
			if d := t.Events[e]; nri.EventMask(e) == 0 || d <= 0 {
				errs = append(errs, fmt.Errorf("WithTimeouts: invalid timeout %v for event %v", d, e))
			}
		}
	}
	if o.statusSet {
		if err := checkStatus(o.status, o.statusReason); err != nil {
			errs = append(errs, fmt.Errorf("WithStatus: %w", err))
		}
	}
	if o.backoffMin <= 0 || o.backoffMax < o.backoffMin {
		errs = append(errs, fmt.Errorf("WithBackoff: invalid bounds %v, %v", o.backoffMin, o.backoffMax))
	}
	return errors.Join(errs...)
}
