package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
)

// maxRecv is the largest message nrictl accepts: more than nrid's 4 MiB
// default, so that a big GetState page or dry-run record never fails here.
const maxRecv = 16 << 20

// conn is a connection to nrid.
type conn struct {
	cc *grpc.ClientConn
}

// dial connects to nrid's socket (a path, or a unix:// target).
func (g *globals) dial() (*conn, error) {
	target := g.socket
	path, isPath := strings.CutPrefix(target, "unix://")
	if !isPath && !strings.Contains(target, "://") {
		path, isPath = target, true
		target = "unix://" + target
	}
	if isPath {
		if _, err := os.Stat(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("cannot reach nrid: %s does not exist; is nrid running? (set --socket or %s)", path, EnvSocket)
			}
			return nil, fmt.Errorf("cannot reach nrid: %w", err)
		}
	}
	cc, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		codec.DialOption(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecv)),
	)
	if err != nil {
		return nil, fmt.Errorf("cannot reach nrid at %s: %w", g.socket, err)
	}
	return &conn{cc: cc}, nil
}

// Close closes the connection (its only error: already closed).
func (c *conn) Close() { _ = c.cc.Close() }

func (c *conn) admin() nriv1beta1.AdminServiceClient { return nriv1beta1.NewAdminServiceClient(c.cc) }

func (c *conn) adaptation() nriv1beta1.AdaptationServiceClient {
	return nriv1beta1.NewAdaptationServiceClient(c.cc)
}

// explain turns a gRPC error into a message for the operator.
func explain(err error, socket string) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := fmt.Sprintf("%s: %s", strings.ToUpper(codeName(st.Code())), st.Message())
	switch st.Code() {
	case codes.Unavailable:
		msg += fmt.Sprintf(" (is nrid running and serving %s?)", socket)
	case codes.PermissionDenied:
		msg += " (this needs the admin grant, or the runtime grant for simulate; by default only root has them)"
	case codes.Unimplemented:
		msg += " (this nrid does not serve that service)"
	}
	return errors.New(msg)
}

func codeName(c codes.Code) string {
	s := c.String()
	// codes.Code.String gives "PermissionDenied"; turn it into PERMISSION_DENIED.
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		upper := r >= 'A' && r <= 'Z'
		if upper && prevLower {
			b.WriteByte('_')
		}
		prevLower = !upper
		b.WriteRune(r)
	}
	return b.String()
}
