package node

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"

	"github.com/nri-grpc/nri-grpc/config"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
)

// Listeners are what a node serves on: the unix socket (server.socket),
// the TCP listener (tcp.address; nil without [tcp]) and the metrics
// listener (observability.metrics_address; nil without). Listen opens
// them; an embedder that has them already (nrid's takeover) hands them to
// ListenWith or straight to Serve.
type Listeners struct {
	// Unix is the gRPC endpoint on the unix socket; Close removes its file
	// unless SetUnlinkOnClose(false) was called.
	Unix *net.UnixListener
	// TCP is the gRPC endpoint with TLS, nil without tcp.address.
	TCP net.Listener
	// Metrics serves /metrics, /readyz and /livez over HTTP, nil without
	// observability.metrics_address.
	Metrics net.Listener
}

// Close closes every listener that is set. Serve and Stop close the
// listeners they served; Close is for listeners that were never served.
func (l Listeners) Close() error {
	var err error
	if l.Unix != nil {
		err = errors.Join(err, l.Unix.Close()) // removes the socket file
	}
	if l.TCP != nil {
		err = errors.Join(err, l.TCP.Close())
	}
	if l.Metrics != nil {
		err = errors.Join(err, l.Metrics.Close())
	}
	return err
}

// Listen prepares the directories (server.plugin_socket_dir and the
// socket's, with their modes and group) and opens every listener the
// configuration names: all of them, or none on an error. It is
// ListenWith(Listeners{}).
func (n *Node) Listen() (Listeners, error) { return n.ListenWith(Listeners{}) }

// ListenWith is Listen that keeps the listeners have holds (a takeover's,
// inherited from another process): it prepares the directories and opens
// only the configured listeners have lacks. On an error it closes what it
// opened, not what have held. A listener of have that the configuration
// does not name (a TCP listener without tcp.address) is closed.
func (n *Node) ListenWith(have Listeners) (_ Listeners, err error) {
	s := n.cfg.Server
	l, opened := have, Listeners{}
	defer func() {
		if err != nil {
			_ = opened.Close()
		}
	}()
	if err := prepareDir(s.PluginSocketDir, s.PluginSocketDirMode, s.PluginSocketDirGroup); err != nil {
		return Listeners{}, fmt.Errorf("plugin socket directory: %w", err)
	}
	if err := prepareDir(filepath.Dir(s.Socket), s.SocketDirMode, ""); err != nil {
		return Listeners{}, fmt.Errorf("socket directory: %w", err)
	}
	if l.Unix == nil {
		lo := sockets.ListenOptions{Mode: s.SocketMode.Perm(), GID: -1}
		if s.SocketGroup != "" {
			if lo.GID, err = config.LookupGroup(s.SocketGroup); err != nil {
				return Listeners{}, fmt.Errorf("server.socket_group: %w", err)
			}
		}
		if l.Unix, err = sockets.Listen(s.Socket, lo); err != nil {
			return Listeners{}, err
		}
		opened.Unix = l.Unix
	}
	if n.tcp == nil && l.TCP != nil {
		_ = l.TCP.Close()
		l.TCP = nil
	}
	if n.tcp != nil && l.TCP == nil {
		if l.TCP, err = net.Listen("tcp", n.cfg.TCP.Address); err != nil {
			return Listeners{}, fmt.Errorf("tcp.address: %w", err)
		}
		opened.TCP = l.TCP
	}
	if n.mx == nil && l.Metrics != nil {
		_ = l.Metrics.Close()
		l.Metrics = nil
	}
	if n.mx != nil && l.Metrics == nil {
		if l.Metrics, err = net.Listen("tcp", n.cfg.Observability.MetricsAddress); err != nil {
			return Listeners{}, fmt.Errorf("observability.metrics_address: %w", err)
		}
		opened.Metrics = l.Metrics
	}
	return l, nil
}
