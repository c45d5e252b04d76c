package server_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/server"
)

// unregistrations is a log handler that hands on the reason of every
// "plugin unregistered" record, by plugin, and logs through the test.
type unregistrations struct {
	slog.Handler
	mu      *sync.Mutex
	reasons map[string]chan string
}

func newUnregistrations(t *testing.T) *unregistrations {
	return &unregistrations{Handler: testLogger(t).Handler(), mu: &sync.Mutex{}, reasons: map[string]chan string{}}
}

func (u *unregistrations) of(plugin string) chan string {
	u.mu.Lock()
	defer u.mu.Unlock()
	ch, ok := u.reasons[plugin]
	if !ok {
		ch = make(chan string, 4)
		u.reasons[plugin] = ch
	}
	return ch
}

func (u *unregistrations) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "plugin unregistered" {
		var plugin, reason string
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "plugin":
				plugin = a.Value.String()
			case "reason":
				reason = a.Value.String()
			}
			return true
		})
		u.of(plugin) <- reason
	}
	return u.Handler.Handle(ctx, r)
}

func (u *unregistrations) WithAttrs(as []slog.Attr) slog.Handler {
	c := *u
	c.Handler = u.Handler.WithAttrs(as)
	return &c
}

func (u *unregistrations) WithGroup(name string) slog.Handler {
	c := *u
	c.Handler = u.Handler.WithGroup(name)
	return &c
}

// reason waits for the reason plugin was unregistered with.
func (u *unregistrations) reason(t *testing.T, plugin string) string {
	t.Helper()
	select {
	case r := <-u.of(plugin):
		return r
	case <-time.After(wait()):
		t.Fatalf("%s was not unregistered", plugin)
		return ""
	}
}

// TestSessionEndReasons: nrid tells how a plugin's registration session
// ended — the plugin ended it (canceled its RegisterPlugin call), closed
// its connection (gRPC's orderly close), or its connection broke (the
// socket closed under the plugin, as when its process is killed) — although
// gRPC cancels the session's stream alike in all three cases.
func TestSessionEndReasons(t *testing.T) {
	u := newUnregistrations(t)
	h := newHarness(t, server.WithLogger(slog.New(u)))

	ended := h.plugin("10", "ends", nil)
	ended.EndSession()
	if got := u.reason(t, "10-ends"); got != "the plugin ended its registration session" {
		t.Errorf("a plugin that ended its session: %q", got)
	}

	closed := h.plugin("20", "closes", nil)
	closed.CloseConn()
	if got := u.reason(t, "20-closes"); got != "the plugin closed its connection" {
		t.Errorf("a plugin that closed its connection: %q", got)
	}

	// The socket closes under the plugin's gRPC client: no RST_STREAM, no
	// GOAWAY, what nrid sees of a killed plugin.
	var (
		mu   sync.Mutex
		conn net.Conn
	)
	dial := grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "unix", strings.TrimPrefix(addr, "unix://"))
		mu.Lock()
		conn = c
		mu.Unlock()
		return c, err
	})
	h.plugin("30", "killed", func(p *testplugin.Plugin) { p.DialOptions = []grpc.DialOption{dial} })
	mu.Lock()
	_ = conn.Close()
	mu.Unlock()
	got := u.reason(t, "30-killed")
	if !strings.HasPrefix(got, "the plugin's connection broke (process killed or crashed?): ") || !strings.Contains(got, "EOF") {
		t.Errorf("a plugin whose connection broke: %q", got)
	}
}
