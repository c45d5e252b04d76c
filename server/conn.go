package server

import (
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// conn is how the server reaches one plugin instance: over the connection
// a Dialer made (a remote plugin), or by calling its Go implementation (an
// in-process plugin, which receives the server's request objects and must
// not modify or retain them). Exactly one of cc and impl is set.
type conn struct {
	cc   PluginConn
	impl nriv1beta1.PluginServiceServer
}

// remote reports whether calls cross a connection (and so benefit from
// pre-encoding).
func (c *conn) remote() bool { return c.cc != nil }

func (c *conn) close() error {
	if c.cc == nil {
		return nil
	}
	return c.cc.Close()
}
