package handover_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nri-grpc/nri-grpc/internal/handover"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	t.Cleanup(cancel)
	return c
}

// oldNrid serves one takeover request at path with prepare and reports
// Offer's result.
func oldNrid(t *testing.T, path string, prepare func(context.Context) (*handover.Package, error)) <-chan error {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	res := make(chan error, 1)
	go func() {
		c, err := l.AcceptUnix()
		if err != nil {
			res <- err
			return
		}
		_, err = handover.Offer(ctx(t), c, prepare)
		res <- err
		if err == nil {
			handover.Bye(c)
		} else {
			_ = c.Close()
		}
	}()
	return res
}

// TestTakeReceivesTheDescriptors: a listening socket and its state cross
// to the new side; a connection made afterwards is accepted by the new
// side's copy; the old side learns that the package was taken and the new
// side that the old one said goodbye.
func TestTakeReceivesTheDescriptors(t *testing.T) {
	dir := t.TempDir()
	lis, err := net.Listen("unix", filepath.Join(dir, "served.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	lf, err := lis.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	res := oldNrid(t, filepath.Join(dir, "handover.sock"), func(context.Context) (*handover.Package, error) {
		return &handover.Package{Files: map[string]*os.File{"unix": lf}, Data: []byte(strings.Repeat("state", 100000))}, nil
	})
	got, err := handover.Take(ctx(t), filepath.Join(dir, "handover.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != 500000 || got.Files["unix"] == nil || len(got.Files) != 1 {
		t.Fatalf("received %d bytes and files %v", len(got.Data), got.Files)
	}
	gone, err := got.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != nil {
		t.Fatalf("old side: %v", err)
	}
	<-gone
	newLis, err := net.FileListener(got.Files["unix"])
	if err != nil {
		t.Fatal(err)
	}
	defer newLis.Close()
	// The old side stops listening; the socket stays (its path too).
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = lis.Close()
	_ = lf.Close()
	accepted := make(chan error, 1)
	go func() {
		c, err := newLis.Accept()
		if err == nil {
			_, err = io.WriteString(c, "hi")
			_ = c.Close()
		}
		accepted <- err
	}()
	c, err := net.Dial("unix", filepath.Join(dir, "served.sock"))
	if err != nil {
		t.Fatalf("dialing the handed-over socket: %v", err)
	}
	b, _ := io.ReadAll(c)
	if string(b) != "hi" || <-accepted != nil {
		t.Fatalf("read %q from the new side's listener", b)
	}
}

// TestTakeWithNobodyRunning: no socket, or a stale one, is ErrNoneRunning.
func TestTakeWithNobodyRunning(t *testing.T) {
	dir := t.TempDir()
	if _, err := handover.Take(ctx(t), filepath.Join(dir, "none.sock")); !errors.Is(err, handover.ErrNoneRunning) {
		t.Fatalf("no socket: %v", err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "stale.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	_ = l.Close()
	if _, err := handover.Take(ctx(t), filepath.Join(dir, "stale.sock")); !errors.Is(err, handover.ErrNoneRunning) {
		t.Fatalf("stale socket: %v", err)
	}
}

// TestRefusals: the old side that cannot prepare says why; the new side
// that refuses the package makes Offer fail with its reason.
func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	res := oldNrid(t, filepath.Join(dir, "a.sock"), func(context.Context) (*handover.Package, error) {
		return nil, errors.New("not synchronized yet")
	})
	if _, err := handover.Take(ctx(t), filepath.Join(dir, "a.sock")); err == nil || !strings.Contains(err.Error(), "not synchronized yet") {
		t.Fatalf("Take from a side that cannot prepare: %v", err)
	}
	if err := <-res; err == nil {
		t.Fatal("Offer succeeded although prepare failed")
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	res = oldNrid(t, filepath.Join(dir, "b.sock"), func(context.Context) (*handover.Package, error) {
		return &handover.Package{Files: map[string]*os.File{"null": f}}, nil
	})
	got, err := handover.Take(ctx(t), filepath.Join(dir, "b.sock"))
	if err != nil {
		t.Fatal(err)
	}
	got.Refuse(errors.New("wrong config"))
	if err := <-res; err == nil || !strings.Contains(err.Error(), "wrong config") {
		t.Fatalf("Offer after a refusal: %v", err)
	}
}
