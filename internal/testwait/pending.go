package testwait

import (
	"errors"
	"net"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Pending reports whether a connection is waiting to be accepted on l,
// without waiting: the proof a test needs that nothing dialed l. A
// connect(2) has queued its connection on the listener by the time it
// returns, so a dial that happened is there already. (Accept with a
// deadline in the past would not do: Go fails it before asking the
// kernel.) A connection found is closed. l must be a *net.UnixListener or
// a *net.TCPListener.
func Pending(t testing.TB, l net.Listener) bool {
	t.Helper()
	sc, ok := l.(syscall.Conn)
	if !ok {
		t.Fatalf("testwait.Pending: %T has no descriptor", l)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got bool
	var acceptErr error
	if err := raw.Control(func(fd uintptr) {
		// Go's listeners are non-blocking: EAGAIN is "none".
		nfd, _, err := unix.Accept4(int(fd), unix.SOCK_CLOEXEC)
		switch {
		case err == nil:
			got = true
			_ = unix.Close(nfd)
		case errors.Is(err, unix.EAGAIN):
		default:
			acceptErr = err
		}
	}); err != nil {
		t.Fatal(err)
	}
	if acceptErr != nil {
		t.Fatal(acceptErr)
	}
	return got
}
