package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"io"
	"log/slog"
	"os"
	"sync"

	"google.golang.org/grpc"

	"github.com/nri-grpc/nri-grpc/auth"
	"github.com/nri-grpc/nri-grpc/config"
	"github.com/nri-grpc/nri-grpc/internal/metrics"
	"github.com/nri-grpc/nri-grpc/internal/telemetry"
	"github.com/nri-grpc/nri-grpc/policy"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/tlsconf"
	"github.com/nri-grpc/nri-grpc/transport"
)

// DefaultServiceName is the name a Node reports itself by (traces' service
// name, the message ending health Watch streams) without WithServiceName.
const DefaultServiceName = "nri-grpc"

// Node is one node's NRI server, built from one configuration: see the
// package documentation. Its methods are safe for concurrent use.
type Node struct {
	cfg    *config.Config
	o      options
	log    *slog.Logger
	srv    *server.Server
	policy *policy.Policy
	tracer *telemetry.Telemetry
	mx     *metrics.Metrics // nil without metrics_address

	health   *stoppingHealth // its Watch streams end at the stop
	services []string        // served service names, for health
	unix     *grpc.Server
	tcp      *grpc.Server // nil without tcp.address

	mu       sync.Mutex
	served   bool               // Serve was called
	stopped  bool               // Stop was called
	endServe context.CancelFunc // ends what Serve started beside the gRPC servers
	serving  sync.WaitGroup     // Serve's goroutines
	stopDone chan struct{}      // closed when the first Stop is done
}

// Option configures New.
type Option func(*options)

type options struct {
	log        *slog.Logger
	logOut     io.Writer
	stdout     io.Writer
	serverOpts []server.Option
	metrics    server.Metrics
	name       string
	stopHooks  []func(context.Context)
}

// WithLogger sets the logger of the node and of its server. Without it the
// logger is built from the configuration's [log] (level and format),
// writing to WithLogOutput's writer.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithLogOutput sets where the logger built from the configuration's [log]
// writes (default os.Stderr); WithLogger overrides both.
func WithLogOutput(w io.Writer) Option { return func(o *options) { o.logOut = w } }

// WithStdout sets where the "stdout" trace exporter (observability.tracing
// = "stdout") writes (default os.Stdout).
func WithStdout(w io.Writer) Option { return func(o *options) { o.stdout = w } }

// WithServerOptions adds options of the server core, applied after the
// ones the configuration sets (later ones win).
func WithServerOptions(opts ...server.Option) Option {
	return func(o *options) { o.serverOpts = append(o.serverOpts, opts...) }
}

// WithMetrics adds a metrics sink. It sees every measurement the server
// makes, beside the node's own Prometheus metrics (with
// observability.metrics_address); the optional interfaces
// (server.FilterMetrics, server.StatusMetrics, server.MissedMetrics) are
// forwarded to the sinks that implement them.
func WithMetrics(m server.Metrics) Option { return func(o *options) { o.metrics = m } }

// WithServiceName sets the name the node reports itself by: the service
// name of its traces and the message that ends health Watch streams at the
// stop ("NAME is stopping"); default DefaultServiceName.
func WithServiceName(name string) Option { return func(o *options) { o.name = name } }

// WithStopHook adds fn to Stop: it runs after the server's Shutdown (the
// plugins were told) and before the gRPC servers stop, with Stop's
// context. nrid stops the plugins it launched there. Hooks run in order.
func WithStopHook(fn func(ctx context.Context)) Option {
	return func(o *options) { o.stopHooks = append(o.stopHooks, fn) }
}

// New builds everything that can fail before anything listens: the
// policy, the tokens, the TLS configuration, tracing, metrics, the server
// core and the gRPC servers. cfg must be checked (config.Load or
// config.Parse, or config.Default). Nothing listens until Serve; a Node
// that New returned must be stopped (Stop) to flush its traces.
func New(ctx context.Context, cfg *config.Config, opts ...Option) (_ *Node, err error) {
	if cfg == nil {
		return nil, fmt.Errorf("node: no configuration")
	}
	o := options{logOut: os.Stderr, stdout: os.Stdout, name: DefaultServiceName}
	for _, opt := range opts {
		opt(&o)
	}
	n := &Node{cfg: cfg, o: o, log: o.log, stopDone: make(chan struct{})}
	if n.log == nil {
		n.log = NewLogger(cfg.Log, o.logOut)
	}
	if n.policy, err = cfg.CompilePolicy(); err != nil {
		return nil, err
	}
	var tokens *auth.Tokens
	if cfg.TCP.TokensFile != "" {
		if tokens, err = auth.LoadTokens(cfg.TCP.TokensFile); err != nil {
			return nil, err
		}
	}
	var serverTLS, pluginTLS *tls.Config
	if cfg.TCP.Address != "" {
		serverTLS, err = tlsconf.ServerTLS(cfg.TCP.CertFile, cfg.TCP.KeyFile, cfg.TCP.ClientCAFile, cfg.TCP.ClientAuth == "require")
		if err != nil {
			return nil, fmt.Errorf("tcp: %w", err)
		}
		// TCP plugin endpoints are dialed with the same certificate, and
		// verified against the same CA as client certificates.
		if pluginTLS, err = tlsconf.PluginClientTLS(cfg.TCP.CertFile, cfg.TCP.KeyFile, cfg.TCP.ClientCAFile); err != nil {
			return nil, fmt.Errorf("tcp: %w", err)
		}
	}
	if n.tracer, err = setupTracing(ctx, cfg.Observability, o.name, o.stdout, n.log); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = n.tracer.Shutdown(context.Background())
		}
	}()
	if cfg.Observability.MetricsAddress != "" {
		n.mx = metrics.New()
	}
	if n.srv, err = server.New(n.serverOptions(pluginTLS)...); err != nil {
		return nil, err
	}
	if n.mx != nil {
		n.mx.Watch(n.srv)
	}
	if err := n.newGRPC(tokens, serverTLS); err != nil {
		return nil, err
	}
	n.SetServing(false) // until the embedder says
	return n, nil
}

// serverOptions are the server core's options from the configuration,
// then the embedder's.
func (n *Node) serverOptions(pluginTLS *tls.Config) []server.Option {
	cfg := n.cfg
	node := cfg.Server.NodeName
	if node == "" {
		node, _ = os.Hostname()
	}
	s := cfg.Server
	notReady, _ := policy.ParseNotReady(s.NotReady) // checked with the configuration
	opts := []server.Option{
		server.WithLogger(n.log),
		server.WithNodeName(node),
		server.WithRuntime(cfg.Runtime.Name, cfg.Runtime.Version),
		server.WithRegistrationTimeout(s.RegistrationTimeout.D()),
		server.WithRequestTimeout(s.RequestTimeout.D()),
		server.WithMaxTimeout(s.MaxTimeout.D()),
		server.WithShutdownGrace(s.ShutdownGrace.D()),
		server.WithMaxMessageSize(s.MaxMessageSize),
		server.WithMaxConcurrentCalls(uint32(s.MaxConcurrentCalls)),
		server.WithPluginSocketDir(s.PluginSocketDir),
		server.WithValidator(cfg.ValidatorConfig(n.policy)),
		server.WithAuthorizer(n.policy),
		server.WithPluginPolicy(n.policy.PluginPolicy),
		server.WithNotReadyPolicy(notReady),
		server.WithMinResyncInterval(s.MinResyncInterval.D()),
		server.WithDialOptions(n.tracer.DialOptions()...),
	}
	var sinks []server.Metrics
	if n.mx != nil {
		sinks = append(sinks, n.mx)
	}
	if n.o.metrics != nil {
		sinks = append(sinks, n.o.metrics)
	}
	if m := teeMetrics(sinks); m != nil {
		opts = append(opts, server.WithMetrics(m))
	}
	// Unix endpoints in the plugin socket directory; TCP endpoints only
	// with [tcp] configured (WithTLS(nil) refuses them).
	opts = append(opts, server.WithDialer(transport.NewDialer(transport.WithTLS(pluginTLS))))
	return append(opts, n.o.serverOpts...)
}

// NewLogger returns the logger the configuration's [log] describes
// (level and format, checked with the configuration), writing to w.
func NewLogger(c config.Log, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Level))
	o := &slog.HandlerOptions{Level: lvl}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// setupTracing sets tracing up as [observability] says: "off" installs
// nothing. With redact_values off, span status messages (which may quote
// pod values) are kept too.
func setupTracing(ctx context.Context, o config.Observability, name string, stdout io.Writer, log *slog.Logger) (*telemetry.Telemetry, error) {
	opts := []telemetry.Option{telemetry.WithLogger(log), telemetry.WithStdout(stdout)}
	if !o.RedactValues {
		opts = append(opts, telemetry.WithErrorMessages())
	}
	return telemetry.Setup(ctx, telemetry.Config{Exporter: o.Tracing, OTLPEndpoint: o.OTLPEndpoint, ServiceName: name}, opts...)
}

// Server is the server core: the events' entry points, Launch, the
// services' implementations.
func (n *Node) Server() *server.Server { return n.srv }

// Metrics is the node's Prometheus metrics (nil without
// metrics_address), for what the embedder measures itself (nrid's restart
// gate).
func (n *Node) Metrics() *metrics.Metrics { return n.mx }

// Logger is the node's logger (WithLogger's, or the one built from the
// configuration).
func (n *Node) Logger() *slog.Logger { return n.log }

// Policy is the node's compiled policy ([[policy]] and [[plugin]]): the
// one the server authorizes with.
func (n *Node) Policy() *policy.Policy { return n.policy }

// TracerProvider is the node's tracer provider (a no-op one when tracing
// is off), for spans of calls that cross no gRPC connection (the bridge's
// WASM plugins).
func (n *Node) TracerProvider() trace.TracerProvider { return n.tracer.TracerProvider() }

// Config is the configuration the node was built from; it must not be
// modified.
func (n *Node) Config() *config.Config { return n.cfg }
