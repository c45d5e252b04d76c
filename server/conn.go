package server

import (
	"context"

	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// conn is how the server reaches one plugin instance: over the connection
// a Dialer made (a remote plugin), or by calling its Go implementation (an
// in-process plugin, which receives the server's request objects and must
// not modify or retain them). Exactly one of cc and impl is set.
type conn struct {
	cc   PluginConn
	impl nriv1beta1.PluginServiceServer
	enc  EncodedPlugin // impl, when it takes requests encoded
}

// remote reports whether calls cross a connection.
func (c *conn) remote() bool { return c.cc != nil }

// takesBytes reports whether the plugin is sent requests encoded (and so
// benefits from pre-encoding): a remote plugin, or an in-process one that
// forwards them as bytes.
func (c *conn) takesBytes() bool { return c.cc != nil || c.enc != nil }

func (c *conn) close() error {
	if c.cc == nil {
		return nil
	}
	return c.cc.Close()
}

// EncodedPlugin is an in-process plugin (RegisterInProcess) that forwards
// requests as bytes, as the bridge's classic plugins do over ttrpc. The
// server hands it a lifecycle event's request encoded, when it has the
// encoding (the runtime's own bytes, or those it made for a remote plugin
// earlier in the event), instead of the request: one encoding per event,
// not one per plugin. The encoding is v1beta1's, with the fields v1alpha1
// has numbered alike; it may end with the appended changes of earlier
// plugins (an encoding's later fields merge into its earlier ones).
type EncodedPlugin interface {
	nriv1beta1.PluginServiceServer
	// InvokeEncoded calls method (the full gRPC method name) with req, the
	// request's encoding, and decodes the answer into rsp. ok false: the
	// plugin does not take that method encoded, and the server calls the
	// PluginServiceServer method instead. It must not retain req.
	InvokeEncoded(ctx context.Context, method string, req []byte, rsp proto.Message) (ok bool, err error)
}
