package plugin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/apidesc"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
	"github.com/nri-grpc/nri-grpc/internal/grpcreg"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/nri"
)

// errorDomain is the google.rpc.ErrorInfo domain of nri-grpc's errors.
const errorDomain = "nri.v1beta1"

// defaultMaxMessageSize is the server's default and largest message size.
const defaultMaxMessageSize = 4 << 20

// Run serves the plugin, registers it with the server and keeps it
// registered until ctx is done: when the registration ends (the server
// stopped or restarted, the session broke, the plugin was evicted), it
// registers again: while the server is away (its socket refuses connections
// or is missing), as soon as it accepts connections again (see
// awaitServer); while it serves, with exponential backoff and jitter, the
// first retry within 50 ms. It returns nil when
// ctx is done, ErrReplaced when a newer instance of the plugin took over,
// and an error when the server refused the registration for a reason that
// retrying cannot fix (an invalid name, index, endpoint, subscription or
// capability, or a registration the server's policy does not permit).
//
// The endpoint (a unix socket, created with mode 0600, stale socket files
// removed) is kept across registrations and removed when Run returns. Only
// one Run may be active at a time.
func (p *Plugin) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return fmt.Errorf("plugin %s: Run is already running", p.full)
	}
	defer p.running.Store(false)

	lis, err := p.listen()
	if err != nil {
		return fmt.Errorf("plugin %s: listen on %s: %w", p.full, p.endpoint, err)
	}
	srv, hs, err := p.newServer()
	if err != nil {
		_ = lis.Close()
		return fmt.Errorf("plugin %s: %w", p.full, err)
	}
	var (
		serveErr  error
		serveDone = make(chan struct{})
	)
	go func() {
		serveErr = srv.Serve(lis)
		close(serveDone)
	}()
	defer func() {
		hs.Shutdown()
		srv.Stop()
		<-serveDone
	}()
	p.log.Info("serving", "endpoint", p.endpoint.String(), "events", eventNames(p.events))

	bo := backoff{min: p.opts.backoffMin, max: p.opts.backoffMax}
	failures := 0
	back := false // nrid just came back
	for {
		res := p.session(ctx, hs)
		if ctx.Err() != nil {
			p.log.Info("stopped")
			return nil
		}
		if res.registered {
			bo.reset()
			failures = 0
		}
		fresh := res.registered || back
		back = false
		if res.shutdown.GetKind() == nriv1beta1.ShutdownKind_SHUTDOWN_KIND_REPLACED {
			p.log.Info("replaced by a newer instance; not registering again")
			return fmt.Errorf("plugin %s: %w", p.full, ErrReplaced)
		}
		retry, long := retryable(res.err)
		if !retry {
			p.log.Error("registration refused", "error", res.err)
			return fmt.Errorf("plugin %s: registration refused: %w", p.full, res.err)
		}
		if !res.registered {
			failures++
		}
		if !long && !p.reachable(ctx) {
			// nrid is away (stopped, crashed, restarting). The backoff would
			// still be growing when it is back: watch its socket instead,
			// and register as soon as it accepts connections.
			p.logRetry(res, failures, "retry", "when the server accepts connections")
			switch p.awaitServer(ctx, serveDone) {
			case awaitStopped:
				p.log.Info("stopped")
				return nil
			case awaitServeEnded:
				return fmt.Errorf("plugin %s: serving %s stopped: %w", p.full, p.endpoint, serveErr)
			}
			bo.reset()
			back = true
			continue
		}
		// nrid serves: back off with jitter, so that a refused plugin does
		// not hammer it. The first retry after a registration ended, or
		// after nrid came back, comes quickly.
		delay := bo.next()
		switch {
		case long:
			delay = p.opts.backoffMax
		case fresh:
			delay = jitter(min(firstRetry, p.opts.backoffMin))
		}
		p.logRetry(res, failures, "retry_in", delay.Round(time.Millisecond))
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			p.log.Info("stopped")
			return nil
		case <-serveDone:
			t.Stop()
			return fmt.Errorf("plugin %s: serving %s stopped: %w", p.full, p.endpoint, serveErr)
		case <-t.C:
		}
	}
}

// logRetry logs how a registration ended and when the next one starts:
// failures after the first one at debug level.
func (p *Plugin) logRetry(res sessionResult, failures int, when ...any) {
	attrs := when
	if res.err != nil {
		attrs = append(attrs, "error", res.err)
	}
	if res.shutdown != nil {
		attrs = append(attrs, "shutdown", res.shutdown.GetKind().String(), "reason", res.shutdown.GetReason())
	}
	switch {
	case res.registered:
		p.log.Info("registration ended; registering again", attrs...)
	case failures == 1:
		p.log.Warn("registration failed; retrying with backoff (further failures are logged at debug level)",
			append(attrs, "server", p.server.String())...)
	default:
		p.log.Debug("registration failed; retrying", attrs...)
	}
}

// sessionResult is how one registration attempt ended.
type sessionResult struct {
	registered bool                        // it reached Registered
	shutdown   *nriv1beta1.ShutdownRequest // the last Shutdown received, if any
	err        error                       // nil when the server ended it cleanly
}

// session runs one registration: RegisterPlugin, then reading the stream
// until it ends.
func (p *Plugin) session(ctx context.Context, hs *health.Server) sessionResult {
	cc, err := p.dial()
	if err != nil {
		return sessionResult{err: err}
	}
	defer cc.Close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()

	s := &session{cc: cc}
	req := p.registerRequest()
	p.mu.Lock()
	p.pending, p.shutdown, p.sync = s, nil, nil
	statusSent := p.registrationStatusLocked(req)
	p.mu.Unlock()

	stream, err := nriv1beta1.NewRuntimeServiceClient(cc).RegisterPlugin(sctx, req)
	var first *nriv1beta1.RegisterPluginResponse
	if err == nil {
		first, err = stream.Recv()
		if err == nil && first.GetRegistered() == nil {
			err = status.Error(codes.Internal, "the server's first message is not Registered")
		}
	}
	p.mu.Lock()
	p.pending = nil
	if err != nil {
		p.endLocked()
		sd := p.shutdown
		p.mu.Unlock()
		return sessionResult{shutdown: sd, err: err}
	}
	reg := first.GetRegistered()
	if reg.GetInstanceId() != s.instance {
		p.log.Warn("Registered names another instance than Configure", "configured", s.instance, "registered", reg.GetInstanceId())
		s.instance = reg.GetInstanceId()
		p.instance = s.instance
	}
	p.current, p.registered = s, reg
	p.notifyLocked()
	p.mu.Unlock()
	setHealth(hs, healthpb.HealthCheckResponse_SERVING)
	go p.catchUpStatus(sctx, statusSent)
	p.log.Info("registered", "instance", reg.GetInstanceId(), "server", reg.GetServerVersion(),
		"runtime", reg.GetRuntimeName(), "identity", reg.GetIdentity(), "events", eventNames(reg.GetEvents()),
		"request_timeout", reg.GetTimeouts().GetRequest().AsDuration())

	for {
		if _, err = stream.Recv(); err != nil {
			break
		}
	}
	p.mu.Lock()
	p.endLocked()
	sd := p.shutdown
	p.mu.Unlock()
	setHealth(hs, healthpb.HealthCheckResponse_NOT_SERVING)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return sessionResult{registered: true, shutdown: sd, err: err}
}

// endLocked forgets the current registration; p.mu is held.
func (p *Plugin) endLocked() {
	p.instance = ""
	p.sync = nil
	p.current = nil
	if p.registered != nil {
		p.registered = nil
		p.notifyLocked()
	}
}

func setHealth(hs *health.Server, st healthpb.HealthCheckResponse_ServingStatus) {
	hs.SetServingStatus("", st)
	hs.SetServingStatus(nriv1beta1.PluginService_ServiceDesc.ServiceName, st)
}

// maxMessageSize is the declared (or default) maximum message size.
func (p *Plugin) maxMessageSize() int {
	if n := p.caps.GetMaxMessageSize(); n != 0 {
		return int(n)
	}
	return defaultMaxMessageSize
}

// dial makes a connection to the server. On unix sockets it learns the
// server's uid from the peer credentials of the connection.
func (p *Plugin) dial() (*grpc.ClientConn, error) {
	var creds credentials.TransportCredentials
	if p.server.unix {
		creds = peercred.Credentials{ClientCheck: func(info peercred.Info) error {
			p.serverUID.Store(int64(info.UID))
			return nil
		}}
	} else {
		creds = credentials.NewTLS(p.opts.tlsDial.Clone())
	}
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		codec.DialOption(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(defaultMaxMessageSize)),
	}, flowctl.DialOptions()...)
	cc, err := grpc.NewClient(p.server.String(), opts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", p.server, err)
	}
	return cc, nil
}

// listen opens the endpoint.
func (p *Plugin) listen() (net.Listener, error) {
	if p.endpoint.unix {
		return sockets.Listen(p.endpoint.addr, sockets.DefaultListenOptions)
	}
	return net.Listen("tcp", p.endpoint.addr)
}

// newServer makes the gRPC server of the endpoint: PluginService, health
// and reflection, behind the interceptor chain (chain).
func (p *Plugin) newServer() (*grpc.Server, *health.Server, error) {
	var creds credentials.TransportCredentials
	if p.endpoint.unix {
		creds = peercred.Credentials{}
	} else {
		cfg := p.opts.tlsServe.Clone()
		if !p.opts.debugAccess {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
		creds = credentials.NewTLS(cfg)
	}
	max := p.maxMessageSize() + 64<<10
	opts := []grpc.ServerOption{
		grpc.Creds(creds),
		codec.ServerOption(),
		grpc.MaxRecvMsgSize(max),
		grpc.MaxSendMsgSize(max),
	}
	opts = append(opts, p.chain()...)
	srv := grpc.NewServer(append(opts, flowctl.ServerOptions()...)...)
	nriv1beta1.RegisterPluginServiceServer(grpcreg.Registrar(srv), &service{p: p})
	hs := health.NewServer()
	setHealth(hs, healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	if err := apidesc.RegisterReflection(srv, srv); err != nil {
		return nil, nil, fmt.Errorf("reflection: %w", err)
	}
	return srv, hs, nil
}

// retryable classifies how a registration attempt ended
// (docs/PROTOCOL.md §12): whether to try again, and whether with the longest
// backoff.
func retryable(err error) (retry, long bool) {
	if err == nil {
		return true, false
	}
	st := status.Convert(err)
	reason := ""
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == errorDomain {
			reason = info.GetReason()
		}
	}
	switch nriv1beta1.RegistrationRefusal(nriv1beta1.RegistrationRefusal_value[reason]) {
	case nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_NAME,
		nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_INDEX,
		nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_ENDPOINT,
		nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_EVENTS,
		nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_CAPABILITIES,
		nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_NOT_PERMITTED,
		nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_PEER_MISMATCH:
		return false, false
	case nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_IDENTITY_MISMATCH:
		return true, true
	}
	if reason == "" {
		switch st.Code() {
		case codes.Unauthenticated, codes.PermissionDenied, codes.InvalidArgument, codes.Unimplemented:
			return false, false
		}
	}
	return true, false
}

// backoff is an exponential backoff with jitter: each delay is drawn from
// [d/2, d], where d doubles from min up to max.
type backoff struct {
	min, max time.Duration
	mu       sync.Mutex
	cur      time.Duration
}

func (b *backoff) next() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return jitter(b.cur)
}

// jitter draws a delay from [d/2, d].
func jitter(d time.Duration) time.Duration {
	half := d / 2
	return half + rand.N(half+1)
}

func (b *backoff) reset() {
	b.mu.Lock()
	b.cur = 0
	b.mu.Unlock()
}

// eventNames renders a mask as event names, for logs.
func eventNames(mask int32) []string {
	var out []string
	for _, e := range nri.MaskEvents(mask) {
		out = append(out, nri.EventName(e))
	}
	return out
}
