package auth

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	grpcauth "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
)

// ChainConfig configures the interceptor chain.
type ChainConfig struct {
	// Authenticator authenticates every call but health checks. Required.
	Authenticator *Authenticator
	// Access is the per-service authorization of an authenticated caller
	// (policy.Policy.AuthorizeCall). Required.
	Access func(id server.Identity, fullMethod string) error
	// Log is the logger of calls, refusals and panics.
	Log *slog.Logger
	// RegisterRate is how many RegisterPlugin calls per second one identity
	// may make on average, RegisterBurst how many at once. A rate of 0
	// disables the limit.
	RegisterRate  float64
	RegisterBurst int
	// Unary are innermost unary interceptors, for example the server's
	// SimulationGuard.
	Unary []grpc.UnaryServerInterceptor
}

const healthService = "grpc.health.v1.Health"

// ServerOptions returns the interceptor chain of nrid's gRPC servers. The
// order is fixed here, and only here. Outermost first:
//
//  0. Tracing is not an interceptor: the otelgrpc stats handler (a server
//     option nrid adds next to these) sees every call before any of them,
//     refused ones included.
//  1. recovery: a panic anywhere below becomes INTERNAL, logged with its
//     stack; nrid keeps serving.
//  2. auth: authenticates the caller (peer credentials, client
//     certificate, bearer token) and attaches the identity with
//     server.ContextWithIdentity, or refuses with UNAUTHENTICATED and logs
//     one line. Health checks skip it: health is open to everybody.
//  3. logging: one slog line per finished call, with the identity (so after
//     auth), method, code, error and duration; refusals by 4 and 5 are
//     logged here, at WARN. Health checks are not logged.
//  4. access: per-service authorization of the identity (AdminService needs
//     admin, AdaptationService runtime, RuntimeService a plugin grant;
//     health and reflection are open), PERMISSION_DENIED otherwise. Finer
//     checks (which plugin, events, fields) are the server's, through the
//     same policy as server.Authorizer.
//  5. ratelimit: RegisterPlugin calls per identity (token bucket), after
//     access so that strangers cannot drain an identity's budget;
//     RESOURCE_EXHAUSTED when exceeded.
//  6. c.Unary: service guards, unary calls only.
func ServerOptions(c ChainConfig) []grpc.ServerOption {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	notHealth := selector.MatchFunc(func(_ context.Context, cm interceptors.CallMeta) bool { return cm.Service != healthService })

	rec := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		method, _ := grpc.Method(ctx)
		log.Error("panic in a gRPC handler", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return status.Error(codes.Internal, "internal error")
	})

	authFn := c.Authenticator.Authenticate

	logger := logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		log.Log(ctx, slog.Level(lvl), msg, fields...)
	})
	logOpts := []logging.Option{
		logging.WithLogOnEvents(logging.FinishCall),
		logging.WithLevels(codeLevel),
		logging.WithFieldsFromContext(func(ctx context.Context) logging.Fields {
			if id, ok := server.IdentityFromContext(ctx); ok {
				return logging.Fields{"identity", id.Name}
			}
			return nil
		}),
	}

	access := accessInterceptors(c.Access)

	limiter := newIdentityLimiter(c.RegisterRate, c.RegisterBurst)
	isRegister := selector.MatchFunc(func(_ context.Context, cm interceptors.CallMeta) bool {
		return cm.FullMethod() == nriv1beta1.RuntimeService_RegisterPlugin_FullMethodName
	})

	unary := []grpc.UnaryServerInterceptor{
		recovery.UnaryServerInterceptor(rec),                                                           // 1
		selector.UnaryServerInterceptor(grpcauth.UnaryServerInterceptor(authFn), notHealth),            // 2
		selector.UnaryServerInterceptor(logging.UnaryServerInterceptor(logger, logOpts...), notHealth), // 3
		access.unary, // 4
	}
	stream := []grpc.StreamServerInterceptor{
		recovery.StreamServerInterceptor(rec),                                                            // 1
		selector.StreamServerInterceptor(grpcauth.StreamServerInterceptor(authFn), notHealth),            // 2
		selector.StreamServerInterceptor(logging.StreamServerInterceptor(logger, logOpts...), notHealth), // 3
		access.stream, // 4
	}
	if limiter != nil {
		unary = append(unary, selector.UnaryServerInterceptor(ratelimit.UnaryServerInterceptor(limiter), isRegister))     // 5
		stream = append(stream, selector.StreamServerInterceptor(ratelimit.StreamServerInterceptor(limiter), isRegister)) // 5
	}
	unary = append(unary, c.Unary...) // 6
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...)}
}

// codeLevel maps codes to log levels: successes at DEBUG, refusals at WARN,
// server faults at ERROR, the caller's own errors at INFO.
func codeLevel(code codes.Code) logging.Level {
	switch code {
	case codes.OK:
		return logging.LevelDebug
	case codes.Unauthenticated, codes.PermissionDenied, codes.ResourceExhausted:
		return logging.LevelWarn
	case codes.Internal, codes.Unknown, codes.DataLoss:
		return logging.LevelError
	}
	return logging.LevelInfo
}

type accessPair struct {
	unary  grpc.UnaryServerInterceptor
	stream grpc.StreamServerInterceptor
}

// accessInterceptors apply the per-service access check. Health calls
// carry no identity (they skip authentication) and are open.
func accessInterceptors(check func(server.Identity, string) error) accessPair {
	decide := func(ctx context.Context, method string) error {
		id, ok := server.IdentityFromContext(ctx)
		if !ok {
			if strings.HasPrefix(method, "/"+healthService+"/") {
				return nil
			}
			return status.Error(codes.Unauthenticated, "the caller is not authenticated")
		}
		return check(id, method)
	}
	return accessPair{
		unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := decide(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			return h(ctx, req)
		},
		stream: func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := decide(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return h(srv, ss)
		},
	}
}

// identityLimiter is a token bucket per identity.
type identityLimiter struct {
	rate  float64
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// maxBuckets bounds the limiter's memory: beyond it, full buckets (idle
// identities) are forgotten.
const maxBuckets = 4096

func newIdentityLimiter(rate float64, burst int) *identityLimiter {
	if rate <= 0 {
		return nil
	}
	return &identityLimiter{rate: rate, burst: float64(max(burst, 1)), now: time.Now, buckets: map[string]*bucket{}}
}

// Limit implements ratelimit.Limiter.
func (l *identityLimiter) Limit(ctx context.Context) error {
	id, _ := server.IdentityFromContext(ctx)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[id.Name]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.prune(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[id.Name] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		return fmt.Errorf("identity %q registers too often (at most %g per second, %g at once)", id.Name, l.rate, l.burst)
	}
	b.tokens--
	return nil
}

func (l *identityLimiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}
