package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync"
	"time"

	"github.com/nri-grpc/nri-grpc/bridge"
	"github.com/nri-grpc/nri-grpc/internal/handover"
	"github.com/nri-grpc/nri-grpc/internal/version"
)

// serving is one run of serve: what its steps started, for the steps after
// them and for the stop.
type serving struct {
	d  *daemon
	l  *listeners
	in *inherited // what a takeover handed over; nil without one

	errc      chan error         // a listener failed
	endServe  context.CancelFunc // ends node.Serve
	serveDone chan struct{}      // node.Serve returned

	ros     *roster       // server.state_dir's record of the registered plugins; nil without
	gate    []rosterEntry // the plugins registered before the restart
	awaited []rosterEntry // those of gate the restart gate waits for (planGate)
	skipped []rosterEntry // the others
	grace   time.Duration // server.restart_grace
	gated   bool          // the restart gate runs; health and the runtime wait for awaited

	ps         *bridge.PluginSide // the bridge's plugin side, if configured
	bridges    sync.WaitGroup     // the bridge's goroutines
	stopBridge func()             // ends them and waits

	oldGone    chan struct{} // the nrid taken over from is gone (at once without a takeover)
	heldDone   chan struct{} // the takeover's hold on events is over
	launchDone chan struct{} // the launch step is over
	keepDone   chan struct{} // the roster is no longer kept
}

// serve listens, serves until ctx is done or a listener fails, and stops
// gracefully. With --takeover it first takes the sockets and the runtime
// connection of the running nrid, if there is one (takeover.go); and it
// hands its own over when a new nrid asks.
func (d *daemon) serve(ctx context.Context) error {
	// ctx ends with the signal, a failed listener or a takeover.
	ctx, endServe := context.WithCancel(ctx)
	defer endServe()
	s, err := d.start(ctx)
	if err != nil {
		return err
	}
	s.loadGate()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	bridgeCtx, stopBridgeCtx := context.WithCancel(ctx)
	s.stopBridge = func() { stopBridgeCtx(); s.bridges.Wait() }
	if err := s.startBridge(bridgeCtx); err != nil {
		s.abort(err)
		return err
	}
	if err := s.continueTakeover(ctx); err != nil {
		s.abort(err)
		return fmt.Errorf("takeover: %w", err)
	}
	s.startLaunch(ctx)
	hsReady := s.startHandover(ctx)
	s.logServing()
	s.openGate(ctx, watchCtx, bridgeCtx)
	hs, takenBy, serveErr := s.wait(ctx, hsReady)
	endServe()
	s.shutdown(stopWatch, hs, takenBy)
	return serveErr
}

// start takes over from the running nrid (with --takeover), opens the
// listeners and serves gRPC and metrics on them (node.Serve).
func (d *daemon) start(ctx context.Context) (*serving, error) {
	s := &serving{d: d}
	if d.takeover {
		var err error
		if s.in, err = d.takeOver(ctx); err != nil {
			d.release()
			return nil, err
		}
	}
	l, err := d.listen(s.in)
	if err != nil {
		if s.in != nil {
			s.in.taken.Refuse(err)
		}
		d.release()
		return nil, err
	}
	s.l = l
	s.errc = make(chan error, 1)
	serveCtx, endServe := context.WithCancel(context.Background())
	s.endServe, s.serveDone = endServe, make(chan struct{})
	go func() {
		defer close(s.serveDone)
		if err := d.n.Serve(serveCtx, l.Listeners); err != nil {
			s.errc <- err
		}
	}()
	return s, nil
}

// loadGate reads the restart gate: the plugins registered before a restart
// that can come back (planGate) get restart_grace to register again before
// nrid attaches to the runtime and reports SERVING. After a takeover the
// runtime stays attached and its events wait for them instead
// (server.HoldEvents). The required ones it does not wait for are required
// from the start (server.RequireUntilRegistered). It sets the health nrid
// starts with.
func (s *serving) loadGate() {
	d := s.d
	if dir := d.cfg.Server.StateDir; dir != "" {
		var err error
		if s.ros, err = newRoster(dir, d.log); err != nil {
			d.log.Error("restart gate disabled", "error", err)
		} else if s.gate, err = s.ros.load(); err != nil {
			d.log.Warn("restart gate: the list of registered plugins is unreadable; not waiting for any", "error", err)
			s.gate = nil
		}
	}
	rememberSelectors(d.srv, s.gate, d.log)
	d.n.RememberSelectors() // after the gate's: the configuration's win
	s.grace = d.cfg.Server.RestartGrace.D()
	s.gated = len(s.gate) > 0 && s.grace > 0
	if s.gated {
		s.awaited, s.skipped = planGate(s.gate, d.policy)
	}
	d.srv.RequireUntilRegistered(requiredNames(s.skipped))
	d.n.SetServing(!(s.gated && len(s.awaited) > 0) && !d.cfg.Runtime.Required)
}

// startBridge starts the bridge's plugin side and creates its runtime side
// (which runs after the gate, openGate).
func (s *serving) startBridge(bridgeCtx context.Context) error {
	d := s.d
	var err error
	s.ps, err = d.startBridgePlugins(bridgeCtx, &s.bridges, s.l)
	if err == nil {
		d.rs, err = d.newBridgeRuntime()
	}
	return err
}

// abort undoes what serve started, after a failed step.
func (s *serving) abort(err error) {
	if s.in != nil {
		s.in.taken.Refuse(err)
		// The old nrid goes on with these sockets.
		s.l.Unix.SetUnlinkOnClose(false)
	}
	s.stopBridge()
	s.removeClassicSocket(s.in == nil)
	s.d.stop()
	s.endServe()
	<-s.serveDone
}

// continueTakeover, after a takeover, continues the runtime connection here;
// the old nrid stops once told, and its plugins register here again.
// Without a takeover there is nothing to wait for.
func (s *serving) continueTakeover(ctx context.Context) error {
	d, in := s.d, s.in
	s.oldGone = make(chan struct{})
	s.heldDone = make(chan struct{})
	if in == nil {
		close(s.oldGone)
		close(s.heldDone)
		return nil
	}
	// Events wait for the old nrid's plugins that come back from the first
	// one read.
	if len(s.awaited) > 0 {
		d.srv.HoldEvents(rosterNames(s.awaited), time.Now().Add(s.grace))
	}
	adopted, err := d.adoptRuntime(ctx, in, d.rs)
	if err != nil {
		d.srv.HoldEvents(nil, time.Time{})
		return err
	}
	in.taken.Close() // descriptors not used
	gone, err := in.taken.Accept()
	if err != nil {
		d.log.Error("takeover: telling the old nrid", "error", err)
		close(s.oldGone)
	} else {
		go func() { <-gone; close(s.oldGone) }()
	}
	d.log.Info("takeover: took over from the running nrid", "runtime_connection", adopted)
	switch {
	case !adopted:
		// Nothing to hold events on: the gate as after a restart.
		d.srv.HoldEvents(nil, time.Time{})
		close(s.heldDone)
	case s.gated:
		s.gated = false
		awaited, skipped, grace := s.awaited, s.skipped, s.grace
		go func() {
			defer close(s.heldDone)
			owed := d.awaitRestart(ctx, awaited, skipped, grace)
			if s.ros != nil {
				s.ros.owe(owed)
			}
		}()
	default:
		close(s.heldDone)
	}
	return nil
}

// startLaunch launches nrid's plugins once the old nrid's launched plugins
// stopped.
func (s *serving) startLaunch(ctx context.Context) {
	s.launchDone = make(chan struct{})
	go func() {
		defer close(s.launchDone)
		select {
		case <-s.oldGone:
		case <-ctx.Done():
			return
		}
		s.d.launch(ctx, s.d.sup, s.ps)
	}()
}

// logServing logs "serving" with the addresses.
func (s *serving) logServing() {
	d := s.d
	attrs := []any{"socket", d.cfg.Server.Socket, "version", version.Server(), "runtime_required", d.cfg.Runtime.Required}
	if s.l.TCP != nil {
		attrs = append(attrs, "tcp", s.l.TCP.Addr().String())
	}
	if s.l.Metrics != nil {
		attrs = append(attrs, "metrics", s.l.Metrics.Addr().String())
	}
	d.log.Info("serving", attrs...)
}

// openGate waits for the restart gate, keeps the roster, follows the
// runtime for health and runs the bridge's runtime side.
func (s *serving) openGate(ctx, watchCtx, bridgeCtx context.Context) {
	d := s.d
	if s.gated {
		owed := d.awaitRestart(ctx, s.awaited, s.skipped, s.grace)
		if s.ros != nil {
			s.ros.owe(owed)
		}
	}
	s.keepDone = make(chan struct{})
	if s.ros != nil {
		// After a takeover, the roster is the old nrid's until its plugins
		// are back or the bound passed.
		go func() {
			select {
			case <-s.heldDone:
				s.ros.keep(watchCtx, d.srv, s.keepDone)
			case <-watchCtx.Done():
				close(s.keepDone)
			}
		}()
	} else {
		close(s.keepDone)
	}
	if d.cfg.Runtime.Required {
		go d.watchRuntime(watchCtx)
	} else {
		d.n.SetServing(true)
	}
	if d.rs != nil {
		s.bridges.Go(func() { _ = d.rs.Run(bridgeCtx) })
		d.log.Info("bridge runtime side enabled", "runtime_socket", d.cfg.Bridge.RuntimeSocket)
	}
}

// startHandover opens the handover socket for the next takeover once the
// old nrid is gone (its own socket file goes with it). The channel gets the
// handover server, or nil when there is none. Without an old nrid the
// socket is open when startHandover returns, so that a takeover started
// as soon as nrid logs "serving" finds it.
func (s *serving) startHandover(ctx context.Context) <-chan *handoverServer {
	hsReady := make(chan *handoverServer, 1)
	open := func() {
		h, err := s.d.listenHandover(s.l)
		if err != nil {
			s.d.log.Warn("no takeover possible", "error", err)
		} else if h != nil {
			go h.serve(ctx)
		}
		hsReady <- h
	}
	select {
	case <-s.oldGone:
		open()
		return hsReady
	default:
	}
	go func() {
		select {
		case <-s.oldGone:
		case <-ctx.Done():
			hsReady <- nil
			return
		}
		open()
	}()
	return hsReady
}

// wait serves until ctx is done, a listener fails or a new nrid took over
// (takenBy); it returns the handover server and the listener's error.
func (s *serving) wait(ctx context.Context, hsReady <-chan *handoverServer) (hs *handoverServer, takenBy *net.UnixConn, serveErr error) {
	var taken <-chan *net.UnixConn
	for {
		select {
		case <-ctx.Done():
			return hs, takenBy, serveErr
		case serveErr = <-s.errc:
			s.d.log.Error("a listener failed; stopping", "error", serveErr)
			return hs, takenBy, serveErr
		case hs = <-hsReady:
			hsReady = nil
			if hs != nil {
				taken = hs.taken
			}
		case takenBy = <-taken:
			return hs, takenBy, serveErr
		}
	}
}

// removeClassicSocket removes the classic plugin socket's file once the
// bridge, which closed its listener, has stopped, if it is this nrid's own
// (no new nrid took it over, and this one did not inherit it from an nrid
// that goes on).
func (s *serving) removeClassicSocket(own bool) {
	if !own || s.l.classic == nil {
		return
	}
	if err := os.Remove(s.l.classic.Addr().String()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.d.log.Warn("removing the classic plugin socket", "error", err)
	}
}

// shutdown stops what serve started, in order; after a takeover the
// sockets stay where they are, served by the new nrid, which is told last.
func (s *serving) shutdown(stopWatch context.CancelFunc, hs *handoverServer, takenBy *net.UnixConn) {
	if hs != nil {
		_ = hs.lis.Close()
	}
	if takenBy != nil {
		s.l.Unix.SetUnlinkOnClose(false)
	}
	stopWatch()
	<-s.keepDone // the roster stays the set from before the stop
	s.stopBridge()
	s.removeClassicSocket(takenBy == nil)
	<-s.launchDone
	s.d.stop() // the metrics of the stop are still served until its end
	s.endServe()
	<-s.serveDone
	if takenBy != nil {
		handover.Bye(takenBy)
	}
}
