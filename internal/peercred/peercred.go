// Package peercred provides gRPC transport credentials for unix sockets that
// read the peer's credentials (SO_PEERCRED) during the handshake: on the
// server side they identify the caller, on the client side they identify
// the process that listens on the dialed socket.
//
// Peer credentials are read from the connected socket itself, never from
// the file system, so they cannot race with a socket file being replaced.
package peercred

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// AuthType is the AuthInfo type of unix peer credentials.
const AuthType = "unix-peercred"

// Info carries the credentials of a unix socket peer.
type Info struct {
	credentials.CommonAuthInfo
	// PID, UID and GID of the peer process (for the dialing side: of the
	// process that created the listening socket).
	PID int32
	UID uint32
	GID uint32

	conn *ConnState // the server side's connection (WatchConn)
}

// AuthType implements credentials.AuthInfo.
func (Info) AuthType() string { return AuthType }

// String renders the identity, for example "uid:0".
func (i Info) String() string { return fmt.Sprintf("uid:%d", i.UID) }

// PeerUID returns the peer's uid; it makes Info a server.UnixPeer, by which
// the server identifies callers no interceptor identified.
func (i Info) PeerUID() uint32 { return i.UID }

// Of reads the peer credentials of a unix connection.
func Of(conn net.Conn) (Info, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return Info{}, fmt.Errorf("peer credentials: %T is not a socket", conn)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return Info{}, fmt.Errorf("peer credentials: %w", err)
	}
	var (
		cred    *unix.Ucred
		credErr error
	)
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Info{}, fmt.Errorf("peer credentials: %w", err)
	}
	if credErr != nil {
		return Info{}, fmt.Errorf("peer credentials: %w", credErr)
	}
	return Info{
		CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity},
		PID:            cred.Pid, UID: cred.Uid, GID: cred.Gid,
	}, nil
}

// FromContext returns the peer credentials of the caller of a server-side
// call made over a connection that used Credentials.
func FromContext(ctx context.Context) (Info, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return Info{}, false
	}
	info, ok := p.AuthInfo.(Info)
	return info, ok
}

// Check inspects a dialed peer's credentials; a non-nil error fails the
// handshake.
type Check func(Info) error

// Credentials are transport credentials for unix sockets: no encryption,
// peer credentials attached as AuthInfo on both sides. Connections that are
// not unix sockets are refused.
type Credentials struct {
	// ClientCheck, when set, vets the listening peer of every dialed
	// connection.
	ClientCheck Check
}

var _ credentials.TransportCredentials = Credentials{}

// errNotUnix is returned for non-unix connections.
var errNotUnix = errors.New("peer credentials need a unix socket")

func handshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if _, ok := conn.(*net.UnixConn); !ok {
		return nil, nil, errNotUnix
	}
	info, err := Of(conn)
	if err != nil {
		return nil, nil, err
	}
	return conn, info, nil
}

// ClientHandshake implements credentials.TransportCredentials.
func (c Credentials) ClientHandshake(_ context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := handshake(conn)
	if err != nil {
		return nil, nil, err
	}
	if c.ClientCheck != nil {
		if err := c.ClientCheck(info.(Info)); err != nil {
			return nil, nil, err
		}
	}
	return conn, info, nil
}

// ServerHandshake implements credentials.TransportCredentials. The
// connection it returns records what the client's frames say about how its
// calls and the connection end (WatchConn).
func (Credentials) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := handshake(conn)
	if err != nil {
		return nil, nil, err
	}
	w, st := watch(conn)
	i := info.(Info)
	i.conn = st
	return w, i, nil
}

// Info implements credentials.TransportCredentials.
func (Credentials) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: AuthType}
}

// Clone implements credentials.TransportCredentials.
func (c Credentials) Clone() credentials.TransportCredentials { return c }

// OverrideServerName implements credentials.TransportCredentials.
func (Credentials) OverrideServerName(string) error { return nil }
