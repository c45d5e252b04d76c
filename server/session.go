package server

import (
	"context"
	"errors"

	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// sessionWatch tells how a plugin's registration session ended when its
// stream's context was canceled: gRPC cancels it alike when the plugin
// canceled the call, closed its connection, or vanished with it.
type sessionWatch struct {
	conn *peercred.ConnState // nil without peer credentials
	mark peercred.Mark
}

// watchSession starts watching the session of the RegisterPlugin call of
// ctx.
func watchSession(ctx context.Context) sessionWatch {
	w := sessionWatch{conn: peercred.ConnStateFromContext(ctx)}
	if w.conn != nil {
		w.mark = w.conn.Mark()
	}
	return w
}

// Reasons a registration session ended on the plugin's side.
var (
	errSessionEnded = errors.New("the plugin ended its registration session")
	errConnClosed   = errors.New("the plugin closed its connection")
)

// endReason returns why the session ended, its stream's context being done.
func (w sessionWatch) endReason(ctx context.Context) error {
	if w.conn == nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return errors.New("the registration session's deadline passed")
		}
		return errSessionEnded
	}
	reset, goAway, readErr := w.conn.Since(w.mark)
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
