package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

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

// dial connects to nrid's socket (a path, relative or absolute, or a
// unix: target). A socket that is there but that this user may not open is
// a permission error that says which settings open it.
func (g *globals) dial() (*conn, error) {
	target, path := socketTarget(g.socket)
	if path != "" {
		if err := g.checkSocket(path); err != nil {
			return nil, err
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

// socketTarget turns --socket into a gRPC target and, for a unix socket,
// its path: an absolute or relative path, "unix:PATH" (absolute or
// relative) or "unix:///ABSOLUTE". Any other target (with "://") is passed
// as it is, with no path. A relative path stays relative ("unix:PATH"): gRPC
// takes the authority of "unix://PATH" to be the first part of PATH.
func socketTarget(socket string) (target, path string) {
	switch {
	case strings.HasPrefix(socket, "unix://"):
		path = strings.TrimPrefix(socket, "unix://")
	case strings.HasPrefix(socket, "unix:"):
		path = strings.TrimPrefix(socket, "unix:")
	case strings.Contains(socket, "://"):
		return socket, ""
	default:
		path = socket
	}
	if filepath.IsAbs(path) {
		return "unix://" + path, path
	}
	return "unix:" + path, path
}

// checkSocket says why path cannot be used before gRPC tries: it does not
// exist, or this user may not connect to it (connecting to a unix socket
// needs write permission on it, and search permission on its directories).
func (g *globals) checkSocket(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot reach nrid: %s does not exist; is nrid running? (set --socket or %s)", path, EnvSocket)
	case errors.Is(err, fs.ErrPermission):
		return g.permissionError(path, nil)
	case err != nil:
		return fmt.Errorf("cannot reach nrid: %w", err)
	}
	if err := unix.Access(path, unix.W_OK); errors.Is(err, unix.EACCES) {
		return g.permissionError(path, fi)
	}
	return nil
}

// permissionError is the message for a socket this user may not open: who
// may, and the settings that let others in. fi is the socket, nil when it
// could not even be examined.
func (g *globals) permissionError(path string, fi fs.FileInfo) error {
	var b strings.Builder
	fmt.Fprintf(&b, "permission denied: nrictl runs as uid %d, which may not open nrid's socket %s", os.Getuid(), path)
	if st, ok := statOf(fi); ok {
		fmt.Fprintf(&b, " (mode %#o, owner uid %d, group gid %d)", fi.Mode().Perm(), st.Uid, st.Gid)
	} else {
		b.WriteString(" (a directory on the way is closed to it: server.socket_dir_mode)")
	}
	b.WriteString(". By default only root may: run nrictl as root, or open the socket to a group with" +
		` server.socket_mode = "0660" and server.socket_group = "GROUP" in nrid.toml`)
	switch g.command {
	case "health":
		b.WriteString(" (health needs no grant); a probe that does not run as root can ask" +
			" http://<observability.metrics_address>/readyz (or /livez) instead")
	case "simulate":
		b.WriteString(", and give that group the runtime grant in a [[policy]] entry (docs/SECURITY.md §3)")
	default:
		b.WriteString(", and give that group the admin grant in a [[policy]] entry (docs/SECURITY.md §3)")
	}
	return errors.New(b.String())
}

// statOf is fi's owner, when fi is known.
func statOf(fi fs.FileInfo) (*syscall.Stat_t, bool) {
	if fi == nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
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
		if strings.Contains(st.Message(), "permission denied") {
			msg += fmt.Sprintf(" (a permission problem: this user may not open %s; by default only root may,"+
				" server.socket_mode and server.socket_group open it to a group)", socket)
		} else {
			msg += fmt.Sprintf(" (is nrid running and serving %s?)", socket)
		}
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
