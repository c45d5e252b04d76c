package server

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server/check"
)

// RuntimeService returns the gRPC RuntimeService of the server. Serve it on
// a listener whose connections identify their peers (UnixPeer: the
// credentials of transport.UnixCredentials) or behind an authentication
// interceptor (ContextWithIdentity).
func (s *Server) RuntimeService() nriv1beta1.RuntimeServiceServer { return &runtimeService{s: s} }

type runtimeService struct {
	nriv1beta1.UnimplementedRuntimeServiceServer
	s *Server
}

// RegisterPlugin runs a registration session.
func (r *runtimeService) RegisterPlugin(req *nriv1beta1.RegisterPluginRequest, stream grpc.ServerStreamingServer[nriv1beta1.RegisterPluginResponse]) error {
	ctx := stream.Context()
	session := watchSession(ctx)
	s := r.s
	id, ok := IdentityFromContext(ctx)
	if !ok {
		return status.Error(codes.Unauthenticated, "the caller has no identity: connect over the unix socket or authenticate")
	}
	reg := Registration{
		Name:          req.GetPluginName(),
		Index:         req.GetPluginIdx(),
		Identity:      id.Name,
		Kind:          nriv1beta1.PluginKind_PLUGIN_KIND_REMOTE,
		Endpoint:      req.GetEndpoint(),
		Capabilities:  req.GetCapabilities(),
		Timeouts:      req.GetTimeouts(),
		NRIVersion:    req.GetNriVersion(),
		PluginVersion: req.GetPluginVersion(),
		Selectors:     req.GetSelectors(),
		Status:        req.GetStatus(),
		StatusReason:  req.GetStatusReason(),
	}
	reg.Caller = id.Name
	// Everything that needs no state is checked before anything else, the
	// dial included: a refusal names the real problem and quotes no more
	// than a prefix of bad input.
	if err := checkRegistration(reg); err != nil {
		return err
	}
	if err := s.bindLaunched(&reg, &id); err != nil {
		return err
	}
	if err := s.opts.authorizer.AuthorizeRegistration(ctx, id, req); err != nil {
		return err
	}
	c, err := s.dialPlugin(ctx, reg.Index+"-"+reg.Name, req.GetEndpoint(), id)
	if err != nil {
		return err
	}
	p, err := s.register(ctx, reg, c)
	if err != nil {
		return err
	}
	if err := stream.Send(&nriv1beta1.RegisterPluginResponse{
		Message: &nriv1beta1.RegisterPluginResponse_Registered{Registered: s.registered(p)},
	}); err != nil {
		p.close(err)
		return err
	}
	select {
	case <-ctx.Done():
		p.close(session.endReason(ctx))
		return status.FromContextError(ctx.Err()).Err()
	case <-p.closed:
		var se *shutdownError
		if errors.As(p.closeErr, &se) {
			return nil // Shutdown told the plugin why.
		}
		msg := "registration ended"
		if p.closeErr != nil {
			msg += ": " + p.closeErr.Error()
		}
		return status.Error(codes.Unavailable, msg)
	}
}

// UpdateContainers relays a plugin's unsolicited updates and evictions.
func (r *runtimeService) UpdateContainers(ctx context.Context, req *nriv1beta1.UpdateContainersRequest) (*nriv1beta1.UpdateContainersResponse, error) {
	p, err := r.caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.s.authorizeUpdates(p, req); err != nil {
		return nil, err
	}
	failed, failedEv, err := r.s.updateFor(ctx, p, req.GetUpdate(), req.GetEvict())
	if err != nil {
		return nil, err
	}
	return &nriv1beta1.UpdateContainersResponse{Failed: failed, FailedEvictions: failedEv}, nil
}

// caller is the registered plugin instance a call names in its
// "nri-instance-id" metadata, which must belong to the caller's identity
// (the one that registered it, or the connection's for a launched plugin).
// Errors name the rule: INVALID_ARGUMENT without one id, FAILED_PRECONDITION
// for an instance that is not registered, PERMISSION_DENIED for another
// identity's. They quote at most a prefix of the id.
func (r *runtimeService) caller(ctx context.Context) (*plugin, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	ids := md.Get(nri.MetadataInstanceID)
	if len(ids) != 1 || ids[0] == "" {
		return nil, invalid("metadata "+nri.MetadataInstanceID, "must name the instance id of a registered plugin")
	}
	p := r.s.instance(ids[0])
	if p == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "metadata %s: instance %s is not registered", nri.MetadataInstanceID, untrusted.Quote(ids[0]))
	}
	if id, ok := IdentityFromContext(ctx); !ok || (id.Name != p.identity && id.Name != p.caller) {
		return nil, status.Errorf(codes.PermissionDenied, "instance %s belongs to identity %q, not to the caller", untrusted.Quote(ids[0]), p.identity)
	}
	return p, nil
}

// authorizeUpdates checks unsolicited updates against the plugin's grants
// and the value rules (admitAnswer): a refusal is PERMISSION_DENIED or
// INVALID_ARGUMENT naming the field, and nothing is applied.
func (s *Server) authorizeUpdates(p *plugin, m proto.Message) error {
	if err := s.admitAnswer(p, nriv1beta1.Event_EVENT_UNSPECIFIED, nil, m); err != nil {
		s.log.Warn("audit: plugin updates refused", "plugin", p.full, "identity", p.identity,
			"code", status.Code(err).String(), "reason", status.Convert(err).Message())
		p.counters.refused.Add(1)
		return err
	}
	return nil
}

// admitAnswer checks a plugin's answer (an event response, or unsolicited updates
// with event EVENT_UNSPECIFIED and req nil) before anything of it is merged
// or applied: first its grants (the Authorizer), then its values (package
// check: the rules of the OCI runtime spec, runc and the kernel). A refusal
// refuses the whole answer; it is a PERMISSION_DENIED (a missing grant) or
// INVALID_ARGUMENT (a value that breaks a rule) status whose BadRequest
// detail names the field.
func (s *Server) admitAnswer(p *plugin, event nriv1beta1.Event, req, rsp proto.Message) error {
	if err := s.opts.authorizer.AuthorizeResponse(p.identity, p.full, event, req, rsp); err != nil {
		return refusedAnswer(codes.PermissionDenied, "refused by policy", err)
	}
	if err := check.Response(rsp); err != nil {
		return refusedAnswer(codes.InvalidArgument, "refused", err)
	}
	return nil
}

// fieldError is an error about one field of a message: the policy's
// refusals, check's violations.
type fieldError interface {
	error
	FieldPath() string
}

// refusedAnswer builds the status of a refused plugin answer: code, the
// clipped error, and a BadRequest detail naming the field when err names
// one.
func refusedAnswer(code codes.Code, what string, err error) error {
	msg := "response " + what + ": " + clip(err.Error())
	field := ""
	var fe fieldError
	if errors.As(err, &fe) {
		field = fe.FieldPath()
	}
	st := status.New(code, msg)
	if field != "" {
		if d, derr := st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: clip(field), Description: msg},
		}}); derr == nil {
			st = d
		}
	}
	return st.Err()
}

// instance finds a registered plugin instance by id.
func (s *Server) instance(id string) *plugin {
	for _, sl := range *s.order.Load() {
		for _, p := range sl.plugins() {
			if p.instanceID == id {
				return p
			}
		}
	}
	return nil
}

// UpdateContainers relays unsolicited updates and evictions of an
// in-process plugin.
func (h *Handle) UpdateContainers(ctx context.Context, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	if h.p.isClosed() {
		return nil, nil, status.Error(codes.FailedPrecondition, "the plugin is not registered")
	}
	if err := h.p.s.authorizeUpdates(h.p, &nriv1beta1.UpdateContainersRequest{Update: updates, Evict: evictions}); err != nil {
		return nil, nil, err
	}
	return h.p.s.updateFor(ctx, h.p, updates, evictions)
}
