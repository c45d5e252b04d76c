package sockets

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"golang.org/x/sys/unix"
)

// listen listens on a unix socket at path for the rest of the test.
func listen(t *testing.T, path string) *net.UnixListener {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	t.Cleanup(func() { l.Close() })
	return l
}

// tree makes a plugin directory "p" and, beside it, "outside" with a
// listening socket.
func tree(t *testing.T) (dir, outsideDir string, outside *net.UnixListener) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, "p")
	outsideDir = filepath.Join(base, "outside")
	for _, d := range []string{dir, outsideDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, outsideDir, listen(t, filepath.Join(outsideDir, "target.sock"))
}

func dial(dir, rel string, opts ...BeneathOption) (*net.UnixConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return DialBeneath(ctx, dir, rel, opts...)
}

func TestDialBeneathConnects(t *testing.T) {
	dir, _, _ := tree(t)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"a.sock", "sub/b.sock"} {
		l := listen(t, filepath.Join(dir, rel))
		c, err := dial(dir, rel, OwnedBy(uint32(os.Getuid())))
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		c.Close()
		if !testwait.Pending(t, l) {
			t.Errorf("%s: the listener saw no connection", rel)
		}
	}
}

// TestDialBeneathRefusesSymlinksBeforeConnecting: a symbolic link to a
// socket outside the directory, a symbolic link to a directory outside it
// on the way, and even a symbolic link to a socket inside it are refused
// before anything is connected to.
func TestDialBeneathRefusesSymlinksBeforeConnecting(t *testing.T) {
	dir, outsideDir, outside := tree(t)
	inside := listen(t, filepath.Join(dir, "real.sock"))
	for link, to := range map[string]string{
		"final.sock":  filepath.Join(outsideDir, "target.sock"),
		"dir":         outsideDir,
		"inside.sock": filepath.Join(dir, "real.sock"),
		"relative":    "../outside",
	} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range []string{"final.sock", "dir/target.sock", "inside.sock", "relative/target.sock"} {
		c, err := dial(dir, rel)
		if err == nil {
			c.Close()
			t.Errorf("%s: connected", rel)
			continue
		}
		if !errors.Is(err, ErrSymlink) {
			t.Errorf("%s: got %v, want ErrSymlink", rel, err)
		}
	}
	if testwait.Pending(t, outside) {
		t.Error("the socket outside the directory saw a connection")
	}
	if testwait.Pending(t, inside) {
		t.Error("the socket behind the inside link saw a connection")
	}
}

func TestDialBeneathRefusesEscapes(t *testing.T) {
	dir, _, outside := tree(t)
	for _, rel := range []string{"", ".", "..", "../outside/target.sock", "a/../../outside/target.sock", "/abs.sock", "a//b.sock", "./a.sock"} {
		c, err := dial(dir, rel)
		if err == nil {
			c.Close()
			t.Errorf("%q: connected", rel)
			continue
		}
		if !errors.Is(err, ErrNotBeneath) {
			t.Errorf("%q: got %v, want ErrNotBeneath", rel, err)
		}
	}
	if testwait.Pending(t, outside) {
		t.Error("the socket outside the directory saw a connection")
	}
}

// TestDialBeneathRefusesWhatIsNotASocket: a regular file, a directory and a
// fifo (which must not block: it is never opened for reading) are refused,
// and so is a file on the way where a directory should be.
func TestDialBeneathRefusesWhatIsNotASocket(t *testing.T) {
	dir, _, _ := tree(t)
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir.sock"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]error{
		"file":      ErrNotSocket,
		"dir.sock":  ErrNotSocket,
		"fifo":      ErrNotSocket,
		"file/x":    ErrNotDirectory,
		"missing":   fs.ErrNotExist,
		"missing/x": fs.ErrNotExist,
	} {
		c, err := dial(dir, rel)
		if err == nil {
			c.Close()
			t.Errorf("%s: connected", rel)
			continue
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", rel, err, want)
		}
	}
}

// TestDialBeneathNobodyListening: a socket file without a listener (a
// stale socket) is refused by the kernel.
func TestDialBeneathNobodyListening(t *testing.T) {
	dir, _, _ := tree(t)
	l := listen(t, filepath.Join(dir, "stale.sock"))
	l.Close()
	_, err := dial(dir, "stale.sock")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v, want ECONNREFUSED", err)
	}
}

// TestDialBeneathOwner: a socket owned by another uid is refused before
// connecting. As root the socket is really given away; otherwise the check
// is asked for a uid that does not own it.
func TestDialBeneathOwner(t *testing.T) {
	dir, _, _ := tree(t)
	path := filepath.Join(dir, "x.sock")
	l := listen(t, path)
	owner, other := uint32(os.Getuid()), uint32(os.Getuid())+1
	if os.Getuid() == 0 {
		owner, other = 65534, 0
		if err := os.Chown(path, int(owner), -1); err != nil {
			t.Fatal(err)
		}
	}
	c, err := dial(dir, "x.sock", OwnedBy(other))
	if err == nil {
		c.Close()
		t.Fatal("connected to a socket of another uid")
	}
	if !errors.Is(err, ErrOwner) {
		t.Fatalf("got %v, want ErrOwner", err)
	}
	if testwait.Pending(t, l) {
		t.Fatal("the socket of another uid saw a connection")
	}
	c, err = dial(dir, "x.sock", OwnedBy(owner), CheckFile(func(f SocketFile) error {
		if f.UID != owner || f.Mode&fs.ModeSocket == 0 || f.Path != path {
			t.Errorf("socket file %+v", f)
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !testwait.Pending(t, l) {
		t.Fatal("its owner's check passed, but the listener saw no connection")
	}
}

// TestDialBeneathConnectsToWhatItChecked: the name is swapped for another
// socket between the check and the connect; the connection still reaches
// the socket that was checked, through its descriptor.
func TestDialBeneathConnectsToWhatItChecked(t *testing.T) {
	dir, _, _ := tree(t)
	path := filepath.Join(dir, "x.sock")
	checked := listen(t, path)
	decoy := listen(t, filepath.Join(dir, "decoy.sock"))
	c, err := dial(dir, "x.sock", CheckFile(func(SocketFile) error {
		if err := os.Rename(path, filepath.Join(dir, "moved.sock")); err != nil {
			return err
		}
		return os.Rename(filepath.Join(dir, "decoy.sock"), path)
	}))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !testwait.Pending(t, checked) {
		t.Error("the checked socket saw no connection")
	}
	if testwait.Pending(t, decoy) {
		t.Error("the socket swapped in after the check got the connection")
	}
	// The swap did happen: by name, the path now leads to the decoy.
	byName, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	byName.Close()
	if !testwait.Pending(t, decoy) {
		t.Error("the swap did not take place")
	}
}

func TestDialBeneathHonoursContext(t *testing.T) {
	dir, _, _ := tree(t)
	l := listen(t, filepath.Join(dir, "x.sock"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := DialBeneath(ctx, dir, "x.sock"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if testwait.Pending(t, l) {
		t.Fatal("a cancelled dial connected")
	}
}
