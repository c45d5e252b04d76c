package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/peer"

	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// sessionWatch tells how a plugin's registration session ended when its
// stream's context was canceled: gRPC cancels it alike when the plugin
// canceled the call, closed its connection, or vanished with it.
type sessionWatch struct {
	// since is what the peer did since the session began (ConnWatcher);
	// nil when the connection is not watched.
	since func() (reset, goAway bool, readErr error)
}

// watchSession starts watching the session of the RegisterPlugin call of
// ctx.
func watchSession(ctx context.Context) sessionWatch {
	if p, ok := peer.FromContext(ctx); ok {
		if cw, ok := p.AuthInfo.(ConnWatcher); ok {
			return sessionWatch{since: cw.WatchConn()}
		}
	}
	return sessionWatch{}
}

// Reasons a registration session ended on the plugin's side.
var (
	errSessionEnded = errors.New("the plugin ended its registration session")
	errConnClosed   = errors.New("the plugin closed its connection")
)

// endReason returns why the session ended, its stream's context being done.
func (w sessionWatch) endReason(ctx context.Context) error {
	if w.since == nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return errors.New("the registration session's deadline passed")
		}
		return errSessionEnded
	}
	reset, goAway, readErr := w.since()
	switch {
	case reset:
		return errSessionEnded
	case goAway:
		return errConnClosed
	case readErr != nil:
		return errors.New("the plugin's connection broke (process killed or crashed?): " + untrusted.Cut(readErr.Error(), MaxMessageLen))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errors.New("the registration session's deadline passed")
	}
	return errors.New("the registration session ended: " + ctx.Err().Error())
}
