package plugin

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
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

// Option configures a Plugin.
type Option func(*options) error

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
}

// WithName sets the plugin name (characters from [a-zA-Z0-9_.+-]).
// NRI_GRPC_PLUGIN_NAME overrides it.
func WithName(name string) Option {
	return func(o *options) error { o.name = name; return nil }
}

// WithIndex sets the plugin's two-digit index ("00" to "99"), which orders
// it among plugins. NRI_GRPC_PLUGIN_IDX overrides it. Without a name or an
// index, both are parsed from the binary's name when it is "NN-name", as in
// classic NRI.
func WithIndex(idx string) Option {
	return func(o *options) error { o.index = idx; return nil }
}

// WithServerAddress sets nrid's address: a gRPC target ("unix:///path",
// "dns:///host:port") or an absolute socket path. The default is
// DefaultServerAddress; NRI_GRPC_SERVER_ADDRESS overrides it. TCP targets
// need WithTLS.
func WithServerAddress(addr string) Option {
	return func(o *options) error { o.serverAddress = addr; return nil }
}

// WithEndpoint sets where the plugin serves PluginService: an absolute unix
// socket path (or "unix:///path"), or, with WithTLS, "dns:///host:port".
// The default is NN-name.sock in the socket directory (see WithSocketDir);
// NRI_GRPC_PLUGIN_ENDPOINT overrides it. Two processes cannot share one
// endpoint: start a new instance of a running plugin with another one.
func WithEndpoint(endpoint string) Option {
	return func(o *options) error { o.endpoint = endpoint; return nil }
}

// WithSocketDir sets the directory of the default endpoint (default
// DefaultSocketDir). It must be nrid's plugin socket directory.
func WithSocketDir(dir string) Option {
	return func(o *options) error { o.socketDir = dir; return nil }
}

// WithTLS enables TCP. dial is the client configuration used to reach nrid
// at a "dns:///host:port" address (the plugin's certificate and nrid's CA);
// serve is the server configuration of a "dns:///host:port" endpoint (the
// plugin's certificate, and the CA of nrid's client certificate in
// ClientCAs: unless WithDebugAccess is given, the SDK requires and verifies
// client certificates). Either may be nil when unused.
func WithTLS(dial, serve *tls.Config) Option {
	return func(o *options) error {
		if dial == nil && serve == nil {
			return errors.New("WithTLS: both configurations are nil")
		}
		o.tlsDial, o.tlsServe = dial, serve
		return nil
	}
}

// WithMaxConcurrentCalls declares how many calls the plugin accepts at the
// same time (default 1). Handlers must then be safe for concurrent use;
// events of one pod are still delivered one at a time.
func WithMaxConcurrentCalls(n uint32) Option {
	return func(o *options) error { o.maxConcurrent = n; return nil }
}

// WithMaxMessageSize declares the largest message the plugin accepts from
// the server (default and maximum 4 MiB; at least 64 KiB). Synchronize
// pages are sized to it.
func WithMaxMessageSize(n uint32) Option {
	return func(o *options) error {
		if n < 64<<10 {
			return fmt.Errorf("WithMaxMessageSize: %d is below 65536 bytes", n)
		}
		o.maxMessageSize = n
		return nil
	}
}

// WithDryRun declares that the plugin's handlers honour dry_run requests
// without side effects (see DryRunner).
func WithDryRun() Option {
	return func(o *options) error { o.dryRun = true; return nil }
}

// WithResync declares that the plugin handles resynchronizations (see
// ResyncInterface): they go to Resync if implemented, else to Synchronize.
func WithResync() Option {
	return func(o *options) error { o.resync = true; return nil }
}

// WithTimeouts asks for call timeouts.
func WithTimeouts(t Timeouts) Option {
	return func(o *options) error {
		if t.Request < 0 || t.Synchronize < 0 {
			return errors.New("WithTimeouts: negative timeout")
		}
		events := map[nriv1beta1.Event]time.Duration{}
		for e, d := range t.Events {
			if EventMask(e) == 0 || d <= 0 {
				return fmt.Errorf("WithTimeouts: invalid timeout %v for event %v", d, e)
			}
			events[e] = d
		}
		t.Events = events
		o.timeouts = &t
		return nil
	}
}

// WithFailurePolicy asks for a failure policy: what the server does when
// the plugin is not available for a call (timeout, lost connection, ...).
// FailRequest makes the plugin required: creating events fail while it is
// unavailable. KeepConnected keeps it registered after a timeout. The
// operator's policy may override both. Verdicts are not affected: a
// handler's error on a creating event always vetoes it.
func WithFailurePolicy(p *nriv1beta1.FailurePolicy) Option {
	return func(o *options) error {
		if p == nil {
			return errors.New("WithFailurePolicy: nil policy")
		}
		o.failurePolicy = &nriv1beta1.FailurePolicy{FailRequest: p.GetFailRequest(), KeepConnected: p.GetKeepConnected()}
		return nil
	}
}

// WithDebugAccess lets any caller that can connect to the endpoint call the
// plugin, for example grpcurl run by a developer. By default only the
// server's uid and root may (and, on TCP, only clients with a verified
// certificate). Calls must still name the current instance id.
func WithDebugAccess() Option {
	return func(o *options) error { o.debugAccess = true; return nil }
}

// WithLogger sets the logger (default: text to standard error).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("WithLogger: nil logger")
		}
		o.log = l
		return nil
	}
}

// WithPluginVersion sets the plugin's own version, shown by AdminService.
func WithPluginVersion(v string) Option {
	return func(o *options) error { o.pluginVersion = v; return nil }
}

// WithBackoff sets the bounds of the re-registration backoff: the delay
// starts at first and doubles up to limit, each delay drawn at random from
// its upper half (default 100ms to 10s). It applies while the server serves
// and refuses the registration; while the server is away, the plugin
// registers as soon as its socket accepts connections again.
func WithBackoff(first, limit time.Duration) Option {
	return func(o *options) error {
		if first <= 0 || limit < first {
			return fmt.Errorf("WithBackoff: invalid bounds %v, %v", first, limit)
		}
		o.backoffMin, o.backoffMax = first, limit
		return nil
	}
}
