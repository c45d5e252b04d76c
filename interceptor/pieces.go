package interceptor

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// recovery turns a panic into INTERNAL and one ERROR line.
func (c *config) recovery() pair {
	opt := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		method, _ := grpc.Method(ctx)
		args := []any{"method", method}
		if who := c.caller(ctx); who != "" {
			args = append(args, "identity", who)
		}
		c.log.ErrorContext(ctx, "handler panicked", append(args, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))...)
		if c.panicDetails {
			return status.Errorf(codes.Internal, "handler panicked: %v", p)
		}
		return status.Error(codes.Internal, "internal error")
	})
	return pair{recovery.UnaryServerInterceptor(opt), recovery.StreamServerInterceptor(opt)}
}

// authentication attaches the caller's identity or refuses the call with
// one WARN line. (Not grpc-middleware's auth interceptor: that one lets a
// service that implements AuthFuncOverride replace the authentication.)
func (c *config) authentication() pair {
	authenticate := func(ctx context.Context, method string) (context.Context, error) {
		out, err := c.authn.Authenticate(ctx)
		if err != nil {
			addr := ""
			if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
				addr = p.Addr.String()
			}
			c.log.WarnContext(ctx, "authentication refused", "method", method, "peer", addr, "reason", status.Convert(err).Message())
			return nil, err
		}
		return out, nil
	}
	return pair{
		unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			ctx, err := authenticate(ctx, info.FullMethod)
			if err != nil {
				return nil, err
			}
			return h(ctx, req)
		},
		stream: func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			ctx, err := authenticate(ss.Context(), info.FullMethod)
			if err != nil {
				return err
			}
			return h(srv, withContext{ss, ctx})
		},
	}
}

// callLog logs one line per finished call.
func (c *config) callLog() pair {
	logger := logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		c.log.Log(ctx, slog.Level(lvl), msg, fields...)
	})
	opts := []logging.Option{
		logging.WithLogOnEvents(logging.FinishCall),
		logging.WithLevels(codeLevel),
		logging.WithFieldsFromContext(func(ctx context.Context) logging.Fields {
			if who := c.caller(ctx); who != "" {
				return logging.Fields{"identity", who}
			}
			return nil
		}),
	}
	return pair{logging.UnaryServerInterceptor(logger, opts...), logging.StreamServerInterceptor(logger, opts...)}
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

// accessCheck applies check to every call.
func accessCheck(check func(context.Context, string) error) pair {
	return pair{
		unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := check(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			return h(ctx, req)
		},
		stream: func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := check(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return h(srv, ss)
		},
	}
}
