package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/nri-grpc/nri-grpc/bridge"
	"github.com/nri-grpc/nri-grpc/internal/handover"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
)

// handoverSocket is the socket in server.state_dir on which a running nrid
// hands over to a new one started with --takeover.
const handoverSocket = "handover.sock"

// takeoverBound bounds a takeover from the request to the old nrid's
// answer: its event in progress and its calls to the runtime finish first.
const takeoverBound = 30 * time.Second

// takeoverData is the state a takeover carries besides the descriptors.
type takeoverData struct {
	// Listeners are the addresses of the listeners handed over, by name
	// (unix, tcp, metrics, classic).
	Listeners map[string]string `json:"listeners"`
	// Bridge is the runtime side's handover (bridge.Handover), if the old
	// nrid was attached to a classic runtime.
	Bridge json.RawMessage `json:"bridge,omitempty"`
}

// inherited is what the new nrid took over.
type inherited struct {
	taken *handover.Taken
	data  takeoverData
}

// listener returns the inherited listener name if it listens on addr, nil
// otherwise (the caller listens itself).
func (in *inherited) listener(name, addr string) (net.Listener, error) {
	if in == nil {
		return nil, nil
	}
	f := in.taken.Files[name]
	if f == nil || in.data.Listeners[name] != addr {
		return nil, nil
	}
	delete(in.taken.Files, name)
	defer func() { _ = f.Close() }() // the listener has its own duplicate
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("taking over the %s listener: %w", name, err)
	}
	return l, nil
}

// takeOver asks the running nrid, if any, for its sockets and runtime
// connection (--takeover). nil, nil: nobody runs; start as usual.
func (d *daemon) takeOver(ctx context.Context) (*inherited, error) {
	dir := d.cfg.Server.StateDir
	if dir == "" {
		return nil, errors.New("--takeover needs server.state_dir: the running nrid listens for a takeover there")
	}
	ctx, cancel := context.WithTimeout(ctx, takeoverBound)
	defer cancel()
	start := time.Now()
	t, err := handover.Take(ctx, filepath.Join(dir, handoverSocket))
	if errors.Is(err, handover.ErrNoneRunning) {
		d.log.Info("takeover: no running nrid; starting afresh", "socket", filepath.Join(dir, handoverSocket))
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("takeover: %w", err)
	}
	in := &inherited{taken: t}
	if err := json.Unmarshal(t.Data, &in.data); err != nil {
		t.Refuse(err)
		return nil, fmt.Errorf("takeover: %w", err)
	}
	d.log.Info("takeover: received the running nrid's sockets", "listeners", in.data.Listeners,
		"runtime_connection", in.data.Bridge != nil, "took", time.Since(start).Round(time.Microsecond))
	return in, nil
}

// adoptRuntime continues the old nrid's runtime connection, if it had one
// and this nrid is configured for the same runtime socket.
func (d *daemon) adoptRuntime(ctx context.Context, in *inherited, rs *bridge.RuntimeSide) (bool, error) {
	f := in.taken.Files["runtime"]
	if f == nil || in.data.Bridge == nil || rs == nil {
		return false, nil
	}
	delete(in.taken.Files, "runtime")
	ho, err := bridge.DecodeHandover(in.data.Bridge, f)
	if err != nil {
		_ = f.Close()
		return false, err
	}
	if err := rs.Adopt(ctx, ho); err != nil {
		return false, err
	}
	return true, nil
}

// handoverServer is the old nrid's end: it serves takeover requests.
type handoverServer struct {
	d     *daemon
	l     *listeners
	lis   *net.UnixListener
	taken chan *net.UnixConn // the connection of the takeover that succeeded
}

// listenHandover opens the handover socket in server.state_dir.
func (d *daemon) listenHandover(l *listeners) (*handoverServer, error) {
	dir := d.cfg.Server.StateDir
	if dir == "" {
		return nil, nil
	}
	lis, err := sockets.Listen(filepath.Join(dir, handoverSocket), sockets.ListenOptions{Mode: 0o600, GID: -1})
	if err != nil {
		return nil, fmt.Errorf("handover socket: %w", err)
	}
	return &handoverServer{d: d, l: l, lis: lis, taken: make(chan *net.UnixConn, 1)}, nil
}

// serve answers takeover requests, one at a time, until one succeeds or
// the listener closes.
func (h *handoverServer) serve(ctx context.Context) {
	for {
		c, err := h.lis.AcceptUnix()
		if err != nil {
			return
		}
		h.d.log.Info("takeover requested by a new nrid")
		var ho *bridge.Handover
		var pkg *handover.Package
		octx, cancel := context.WithTimeout(ctx, takeoverBound)
		_, err = handover.Offer(octx, c, func(ctx context.Context) (*handover.Package, error) {
			var err error
			pkg, ho, err = h.prepare(ctx)
			return pkg, err
		})
		cancel()
		if err == nil {
			pkg.Close() // the new nrid has its own copies
			h.d.log.Info("takeover: the new nrid took over; stopping")
			h.taken <- c
			return
		}
		h.d.log.Warn("takeover failed; going on", "error", err)
		if pkg != nil {
			delete(pkg.Files, "runtime") // Resume owns it
			pkg.Close()
		}
		if ho != nil {
			if err := h.d.rs.Resume(ctx, ho); err != nil {
				h.d.log.Error("takeover: taking the runtime connection back", "error", err)
			}
		}
		_ = c.Close()
	}
}

// prepare builds the package: the listeners' descriptors, the runtime
// connection (detached) and the state.
func (h *handoverServer) prepare(ctx context.Context) (*handover.Package, *bridge.Handover, error) {
	pkg := &handover.Package{Files: map[string]*os.File{}}
	data := takeoverData{Listeners: map[string]string{}}
	add := func(name string, l interface {
		net.Listener
		File() (*os.File, error)
	}) error {
		f, err := l.File()
		if err != nil {
			return fmt.Errorf("%s listener: %w", name, err)
		}
		pkg.Files[name], data.Listeners[name] = f, l.Addr().String()
		return nil
	}
	var err error
	if h.l.Unix != nil {
		err = errors.Join(err, add("unix", h.l.Unix))
	}
	if tl, ok := h.l.TCP.(*net.TCPListener); ok {
		err = errors.Join(err, add("tcp", tl))
	}
	if ml, ok := h.l.Metrics.(*net.TCPListener); ok {
		err = errors.Join(err, add("metrics", ml))
	}
	if h.l.classic != nil {
		err = errors.Join(err, add("classic", h.l.classic))
	}
	if err != nil {
		pkg.Close()
		return nil, nil, err
	}
	var ho *bridge.Handover
	if h.d.rs != nil {
		if ho, err = h.d.rs.Detach(ctx); err != nil {
			pkg.Close()
			return nil, nil, err
		}
		if data.Bridge, err = json.Marshal(ho); err != nil {
			pkg.Close()
			return nil, ho, err
		}
		pkg.Files["runtime"] = ho.Conn.File
	}
	if pkg.Data, err = json.Marshal(data); err != nil {
		pkg.Close()
		return nil, ho, err
	}
	return pkg, ho, nil
}
