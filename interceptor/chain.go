package interceptor

import (
	"context"
	"log/slog"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"google.golang.org/grpc"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// An Authenticator establishes who calls. It must be safe for concurrent
// use.
type Authenticator interface {
	// Authenticate returns the call's context with the caller's identity
	// attached, or a status error (UNAUTHENTICATED, PERMISSION_DENIED) that
	// refuses the call.
	Authenticate(ctx context.Context) (context.Context, error)
	// Caller names the caller of a call for the log lines and the rate
	// limit, from the context Authenticate returned (or, for a panic above
	// authentication, the incoming one); "" if it has no name.
	Caller(ctx context.Context) string
}

// AuthFunc adapts a function to an Authenticator whose callers have no
// name.
type AuthFunc func(ctx context.Context) (context.Context, error)

// Authenticate implements Authenticator.
func (f AuthFunc) Authenticate(ctx context.Context) (context.Context, error) { return f(ctx) }

// Caller implements Authenticator: "".
func (AuthFunc) Caller(context.Context) string { return "" }

// Option configures the chain.
type Option func(*config)

type config struct {
	log           *slog.Logger
	authn         Authenticator
	access        func(ctx context.Context, fullMethod string) error
	public        map[string]bool
	registerRate  float64
	registerBurst int
	unary         []grpc.UnaryServerInterceptor
	noCallLog     bool
	panicDetails  bool
}

// WithLogger sets the logger of every line the chain writes: panics,
// refused authentications, the call log. The default discards them.
func WithLogger(log *slog.Logger) Option {
	return func(c *config) { c.log = log }
}

// WithAuthenticator authenticates every call but those of WithPublic
// services. Without it, calls are not authenticated and have no caller
// name.
func WithAuthenticator(a Authenticator) Option {
	return func(c *config) { c.authn = a }
}

// WithAccess authorizes the authenticated caller of every call but those of
// WithPublic services: check gets the context with the identity and the
// call's full method ("/package.Service/Method"); an error refuses the
// call, and should be a status (PERMISSION_DENIED, typically).
func WithAccess(check func(ctx context.Context, fullMethod string) error) Option {
	return func(c *config) { c.access = check }
}

// WithPublic opens the named services ("grpc.health.v1.Health") to
// everybody: their calls skip authentication, the call log and access.
func WithPublic(services ...string) Option {
	return func(c *config) {
		if c.public == nil {
			c.public = map[string]bool{}
		}
		for _, s := range services {
			c.public[s] = true
		}
	}
}

// WithRegisterRate limits RuntimeService.RegisterPlugin calls per caller
// (Authenticator.Caller): perSecond on average, burst at once (at least 1).
// A rate of 0, the default, disables the limit.
func WithRegisterRate(perSecond float64, burst int) Option {
	return func(c *config) { c.registerRate, c.registerBurst = perSecond, burst }
}

// WithUnary appends unary interceptors at the inner end of the chain: they
// run after access and the rate limit, with the caller's identity in the
// context.
func WithUnary(i ...grpc.UnaryServerInterceptor) Option {
	return func(c *config) { c.unary = append(c.unary, i...) }
}

// WithoutCallLog turns the call log off: then only panics and refused
// authentications are logged by the chain, and refusals by access are
// logged by nobody unless the check logs them itself.
func WithoutCallLog() Option {
	return func(c *config) { c.noCallLog = true }
}

// WithPanicDetails puts a recovered panic's value in the INTERNAL status
// ("handler panicked: VALUE") instead of "internal error". Use it only when
// every caller may see the server's internals: a plugin, whose caller is
// the NRI server, which records the message as the plugin's last error.
func WithPanicDetails() Option {
	return func(c *config) { c.panicDetails = true }
}

// ServerOptions returns the chain, in the order of the package
// documentation, as the server options of a grpc.Server.
func ServerOptions(opts ...Option) []grpc.ServerOption {
	c := &config{}
	for _, o := range opts {
		o(c)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	notPublic := selector.MatchFunc(func(_ context.Context, cm interceptors.CallMeta) bool { return !c.public[cm.Service] })

	var unary []grpc.UnaryServerInterceptor
	var stream []grpc.StreamServerInterceptor
	add := func(u grpc.UnaryServerInterceptor, s grpc.StreamServerInterceptor, onlyPrivate bool) {
		if onlyPrivate && len(c.public) > 0 {
			u, s = selector.UnaryServerInterceptor(u, notPublic), selector.StreamServerInterceptor(s, notPublic)
		}
		unary, stream = append(unary, u), append(stream, s)
	}

	rec := c.recovery()
	add(rec.unary, rec.stream, false) // 1
	if c.authn != nil {
		a := c.authentication()
		add(a.unary, a.stream, true) // 2
	}
	if !c.noCallLog {
		l := c.callLog()
		add(l.unary, l.stream, true) // 3
	}
	add(rec.unary, rec.stream, false) // 4
	if c.access != nil {
		a := accessCheck(c.access)
		add(a.unary, a.stream, true) // 5
	}
	if limiter := newCallerLimiter(c.registerRate, c.registerBurst, c.caller); limiter != nil {
		isRegister := selector.MatchFunc(func(_ context.Context, cm interceptors.CallMeta) bool {
			return cm.FullMethod() == nriv1beta1.RuntimeService_RegisterPlugin_FullMethodName
		})
		unary = append(unary, selector.UnaryServerInterceptor(ratelimit.UnaryServerInterceptor(limiter), isRegister))     // 6
		stream = append(stream, selector.StreamServerInterceptor(ratelimit.StreamServerInterceptor(limiter), isRegister)) // 6
	}
	unary = append(unary, c.unary...) // 7
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...)}
}

// caller names the caller of an authenticated call.
func (c *config) caller(ctx context.Context) string {
	if c.authn == nil {
		return ""
	}
	return c.authn.Caller(ctx)
}

// pair is one piece of the chain, for unary and streaming calls.
type pair struct {
	unary  grpc.UnaryServerInterceptor
	stream grpc.StreamServerInterceptor
}

// withContext is a server stream whose context is replaced.
type withContext struct {
	grpc.ServerStream
	ctx context.Context
}

// Context implements grpc.ServerStream.
func (s withContext) Context() context.Context { return s.ctx }
