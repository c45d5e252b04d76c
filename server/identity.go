package server

import (
	"context"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Identity is an authenticated caller.
type Identity struct {
	// Name renders the identity, for example "uid:0".
	Name string
	// UID is the unix uid of a caller on a unix socket.
	UID uint32
	// Unix is true when UID is known (a unix socket peer).
	Unix bool
}

// Authorizer is the authorization policy of the server: who may register
// which plugin, subscribe to which events, and change which fields. The
// server consults it at registration, after Configure, and on every plugin
// response before merging it.
type Authorizer interface {
	// AuthorizeRegistration returns nil when id may register req (name,
	// index, endpoint form), or a PERMISSION_DENIED status naming the rule.
	AuthorizeRegistration(ctx context.Context, id Identity, req *nriv1beta1.RegisterPluginRequest) error
	// AuthorizeSubscription returns nil when identity may receive the events
	// of mask as plugin full ("NN-name"), or an error naming the events.
	AuthorizeSubscription(identity, full string, mask uint32) error
	// AuthorizeResponse returns nil when identity may make the changes of
	// rsp (a plugin's answer to req, an event or, with EVENT_UNSPECIFIED,
	// an UpdateContainersRequest or a SynchronizeResponse with req nil), or
	// an error naming the refused field. A refused event response is an
	// availability failure of the plugin; refused unsolicited updates are
	// not applied.
	AuthorizeResponse(identity, full string, event nriv1beta1.Event, req, rsp proto.Message) error
}

// OwnerAuthorizer lets root and the server's own uid do everything and
// refuses everybody else: the default policy.
type OwnerAuthorizer uint32

// AuthorizeRegistration implements Authorizer.
func (o OwnerAuthorizer) AuthorizeRegistration(_ context.Context, id Identity, _ *nriv1beta1.RegisterPluginRequest) error {
	if id.Unix && (id.UID == 0 || id.UID == uint32(o)) {
		return nil
	}
	return refusal(codes.PermissionDenied, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_NOT_PERMITTED, "",
		"identity %q may not register plugins: the default policy allows only root and uid %d", id.Name, uint32(o))
}

// AuthorizeSubscription implements Authorizer: every event is allowed.
func (OwnerAuthorizer) AuthorizeSubscription(string, string, uint32) error { return nil }

// AuthorizeResponse implements Authorizer: every change is allowed.
func (OwnerAuthorizer) AuthorizeResponse(string, string, nriv1beta1.Event, proto.Message, proto.Message) error {
	return nil
}

type identityKey struct{}

// ContextWithIdentity attaches an authenticated identity to a call's
// context (done by the authentication interceptor).
func ContextWithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFromContext returns the caller's identity: the one an
// authentication interceptor attached, else the unix peer credentials of the
// connection ("uid:N") when its transport credentials read them (UnixPeer).
func IdentityFromContext(ctx context.Context) (Identity, bool) {
	if id, ok := ctx.Value(identityKey{}).(Identity); ok {
		return id, true
	}
	if p, ok := peer.FromContext(ctx); ok {
		if u, ok := p.AuthInfo.(UnixPeer); ok {
			uid := u.PeerUID()
			return Identity{Name: "uid:" + strconv.FormatUint(uint64(uid), 10), UID: uid, Unix: true}, true
		}
	}
	return Identity{}, false
}

// UnixPeer is implemented by the gRPC AuthInfo (peer.Peer.AuthInfo) of
// connections whose transport credentials read the peer's unix credentials
// (SO_PEERCRED), as transport.UnixCredentials do: IdentityFromContext
// identifies a caller that no authentication interceptor identified by
// them.
type UnixPeer interface {
	// PeerUID returns the uid of the peer process.
	PeerUID() uint32
}

// ConnWatcher is implemented by the gRPC AuthInfo of connections whose
// transport credentials watch what the peer does on the connection, as
// transport.UnixCredentials do: the server then tells a plugin that ended
// its registration session from one that closed its connection and one
// whose connection broke (its process killed), which gRPC reports alike, as
// the session's context canceled. Without it, every end is "the plugin
// ended its registration session".
type ConnWatcher interface {
	// WatchConn starts watching the connection at the present point, the
	// caller's stream among the streams opened, and returns a function that
	// tells what the peer did since: reset a stream opened before that point
	// (a client canceling its call), sent GOAWAY (a client closing its
	// connection), and how the connection's bytes ended when the peer ended
	// them (io.EOF, a connection reset; nil while they go on or when this
	// side closed it). It returns nil when the connection is not watched.
	WatchConn() func() (reset, goAway bool, readErr error)
}
