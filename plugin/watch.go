package plugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// firstRetry bounds the first delay after a registration ended while
	// nrid still accepts connections (an eviction, a graceful stop that
	// has not closed the socket yet).
	firstRetry = 50 * time.Millisecond
	// pollInterval is how often a plugin tries to connect to an absent
	// nrid, besides the inotify events of its socket's directory.
	pollInterval = 50 * time.Millisecond
	// probeTimeout bounds one connection attempt to a TCP server.
	probeTimeout = time.Second
)

// reachable reports whether the server accepts connections: a connect,
// closed at once, without any gRPC traffic. A refused connection or a
// missing socket file means nrid is away.
func (p *Plugin) reachable(ctx context.Context) bool {
	network := "tcp"
	if p.server.unix {
		network = "unix"
	}
	d := net.Dialer{Timeout: probeTimeout}
	c, err := d.DialContext(ctx, network, p.server.addr)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// awaitResult is how awaitServer ended.
type awaitResult int

const (
	awaitBack       awaitResult = iota // the server accepts connections
	awaitStopped                       // ctx is done
	awaitServeEnded                    // the plugin's own server stopped
)

// awaitServer waits until the server accepts connections again. On a unix
// socket it watches the socket's directory with inotify (nrid creates the
// socket, then chmods it, once it listens), and it tries to connect every
// pollInterval in any case (a TCP server, a directory that is not there
// yet or is replaced, inotify unavailable).
func (p *Plugin) awaitServer(ctx context.Context, serveDone <-chan struct{}) awaitResult {
	var events <-chan struct{}
	if p.server.unix {
		if w, err := watchDir(filepath.Dir(p.server.addr)); err == nil {
			defer w.close()
			events = w.events
		} else {
			p.log.Debug("not watching the server's socket directory; polling", "error", err)
		}
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if p.reachable(ctx) {
			return awaitBack
		}
		select {
		case <-ctx.Done():
			return awaitStopped
		case <-serveDone:
			return awaitServeEnded
		case <-events:
		case <-tick.C:
		}
	}
}

// dirWatch reports changes in a directory (inotify): each batch of events
// is one value on events, coalesced while nobody reads.
type dirWatch struct {
	f      *os.File
	events chan struct{}
}

func watchDir(dir string) (*dirWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	const mask = unix.IN_CREATE | unix.IN_ATTRIB | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		_ = unix.Close(fd)
		return nil, os.NewSyscallError("inotify_add_watch "+dir, err)
	}
	// A non-blocking descriptor: reads wait in the runtime's poller, and
	// Close ends a pending one.
	w := &dirWatch{f: os.NewFile(uintptr(fd), "inotify"), events: make(chan struct{}, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := w.f.Read(buf); err != nil {
				return
			}
			select {
			case w.events <- struct{}{}:
			default:
			}
		}
	}()
	return w, nil
}

func (w *dirWatch) close() { _ = w.f.Close() }
