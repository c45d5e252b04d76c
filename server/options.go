package server

import (
	"io"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

// Defaults of the server's options.
const (
	// DefaultRegistrationTimeout bounds Configure (and the whole
	// registration up to Synchronize).
	DefaultRegistrationTimeout = 5 * time.Second
	// DefaultRequestTimeout bounds one call to one plugin unless the plugin
	// asked for another timeout.
	DefaultRequestTimeout = 2 * time.Second
	// DefaultMaxMessageSize is the largest message the server sends to a
	// plugin that declared no limit, and the most it ever grants.
	DefaultMaxMessageSize = 4 << 20
	// DefaultPluginSocketDir is the only directory remote plugin endpoints
	// may be in by default.
	DefaultPluginSocketDir = "/var/run/nri/plugins"
	// DefaultShutdownGrace bounds the Shutdown call sent to a plugin before
	// its connection is closed.
	DefaultShutdownGrace = time.Second
)

// Option configures a Server; pass options to New. An option only records
// its value and never fails: New applies the options in order (a later one
// overrides an earlier one; nil options are ignored), then validates them
// and returns an error that names the offending option. A nil logger,
// authorizer or metrics sink means the default. plugin.Option and the
// bridge's options have the same shape.
type Option func(*options)

type options struct {
	log                 *slog.Logger
	runtimeName         string
	runtimeVersion      string
	nodeName            string
	registrationTimeout time.Duration
	requestTimeout      time.Duration
	maxTimeout          time.Duration
	maxMessageSize      int
	maxConcurrentCalls  uint32
	pluginSocketDir     string
	shutdownGrace       time.Duration
	dialOptions         []grpc.DialOption
	dialer              Dialer
	validator           validate.Config
	authorizer          Authorizer
	policyFor           func(identity, full string) *PluginPolicy
	metrics             Metrics
	deprecationHook     func(plugin, kind string, event nriv1beta1.Event, details string)
	notReady            nriv1beta1.NotReadyPolicy // default for NOT_READY (status.go)
	minResyncInterval   time.Duration             // between requested resyncs of a plugin
}

func defaultOptions() options {
	return options{
		log:                 slog.New(slog.NewTextHandler(io.Discard, nil)),
		registrationTimeout: DefaultRegistrationTimeout,
		requestTimeout:      DefaultRequestTimeout,
		maxTimeout:          time.Minute,
		maxMessageSize:      DefaultMaxMessageSize,
		maxConcurrentCalls:  16,
		pluginSocketDir:     DefaultPluginSocketDir,
		shutdownGrace:       DefaultShutdownGrace,
		metrics:             noMetrics{},
		minResyncInterval:   DefaultMinResyncInterval,
	}
}

// WithLogger sets the structured logger (default, and for nil: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithRuntime sets the runtime name and version plugins see in Configure
// until a runtime attaches with its own.
func WithRuntime(name, version string) Option {
	return func(o *options) { o.runtimeName, o.runtimeVersion = name, version }
}

// WithNodeName sets the node name sent to plugins.
func WithNodeName(name string) Option { return func(o *options) { o.nodeName = name } }

// WithRegistrationTimeout sets the registration timeout (default 5 s).
func WithRegistrationTimeout(d time.Duration) Option {
	return func(o *options) { o.registrationTimeout = d }
}

// WithRequestTimeout sets the default per-call timeout (default 2 s).
func WithRequestTimeout(d time.Duration) Option { return func(o *options) { o.requestTimeout = d } }

// WithMaxTimeout caps the timeouts plugins may ask for (default 1 min).
func WithMaxTimeout(d time.Duration) Option { return func(o *options) { o.maxTimeout = d } }

// WithMaxMessageSize sets the largest message sent to plugins (default and
// upper bound for grants: 4 MiB).
func WithMaxMessageSize(n int) Option { return func(o *options) { o.maxMessageSize = n } }

// WithMaxConcurrentCalls caps the concurrency granted to plugins (default
// 16).
func WithMaxConcurrentCalls(n uint32) Option { return func(o *options) { o.maxConcurrentCalls = n } }

// WithPluginSocketDir sets the directory remote plugin endpoints must be in
// (default /var/run/nri/plugins): the Dialer is told it
// (DialRequest.SocketDir), and Launch puts launched plugins' sockets there.
func WithPluginSocketDir(dir string) Option { return func(o *options) { o.pluginSocketDir = dir } }

// WithShutdownGrace bounds the Shutdown call to a plugin (default 1 s).
func WithShutdownGrace(d time.Duration) Option { return func(o *options) { o.shutdownGrace = d } }

// WithDialOptions adds gRPC dial options for connections to plugins (for
// example tracing stats handlers); the Dialer applies them
// (DialRequest.Options).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, opts...) }
}

// WithValidator configures the built-in default validator and the
// operator's list of required plugins.
func WithValidator(cfg validate.Config) Option { return func(o *options) { o.validator = cfg } }

// WithAuthorizer sets who may register which plugin (default: root and the
// server's own uid may register anything; nobody else may).
func WithAuthorizer(a Authorizer) Option { return func(o *options) { o.authorizer = a } }

// WithPluginPolicy lets the operator override the failure policy and
// timeouts of plugins by identity and full name ("NN-name"); f returns nil
// for plugins it does not configure.
func WithPluginPolicy(f func(identity, full string) *PluginPolicy) Option {
	return func(o *options) { o.policyFor = f }
}

// PluginPolicy is the operator's policy for one plugin.
type PluginPolicy struct {
	// Required forces the failure policy to "fail" (fail_request) when true.
	Required *bool
	// KeepConnected overrides FailurePolicy.keep_connected when set.
	KeepConnected *bool
	// MaxTimeout caps this plugin's timeouts when non-zero.
	MaxTimeout time.Duration
	// NotReady is what the plugin's NOT_READY status means for its events;
	// UNSPECIFIED: the server's default (WithNotReadyPolicy).
	NotReady nriv1beta1.NotReadyPolicy
	// Selectors are the operator's event selectors for the plugin: they
	// apply when it registers without selectors of its own (a classic
	// plugin behind the bridge always does); a plugin's own selectors win
	// (selectors.go).
	Selectors []*nriv1beta1.EventSelector
}

// WithDeprecationHook calls hook on the first occurrence of each
// deprecated behaviour per plugin, kind and event (RecordDeprecation), with
// the plugin's full name: an embedding runtime reports it as its own
// warning (the pkg/adaptation drop-in's DeprecationRecorder). It runs on the
// dispatch path and must not block.
func WithDeprecationHook(hook func(plugin, kind string, event nriv1beta1.Event, details string)) Option {
	return func(o *options) { o.deprecationHook = hook }
}

// WithMetrics sets the metrics sink (default, and for nil: none).
func WithMetrics(m Metrics) Option { return func(o *options) { o.metrics = m } }

// Metrics receives the server's measurements. Implementations must be safe
// for concurrent use and fast: they are called on the dispatch path.
type Metrics interface {
	// PluginCall records one call to a plugin.
	PluginCall(plugin string, event nriv1beta1.Event, outcome nriv1beta1.CallOutcome, d time.Duration)
	// Synchronized records one (re)synchronization of a plugin.
	Synchronized(plugin string, objects, bytes int, d time.Duration)
	// CutWait records how long an event waited for a synchronizing plugin.
	CutWait(plugin string, d time.Duration)
	// Plugins records the number of registered plugins.
	Plugins(n int)
	// FailedOpen records a failed call the plugin's ignore policy let the
	// event go on without.
	FailedOpen(plugin string, event nriv1beta1.Event, outcome nriv1beta1.CallOutcome)
	// Deprecation records one occurrence of a deprecated plugin behaviour.
	Deprecation(plugin, kind string)
}

type noMetrics struct{}

func (noMetrics) PluginCall(string, nriv1beta1.Event, nriv1beta1.CallOutcome, time.Duration) {}
func (noMetrics) Synchronized(string, int, int, time.Duration)                               {}
func (noMetrics) CutWait(string, time.Duration)                                              {}
func (noMetrics) Plugins(int)                                                                {}
func (noMetrics) FailedOpen(string, nriv1beta1.Event, nriv1beta1.CallOutcome)                {}
func (noMetrics) Deprecation(string, string)                                                 {}
