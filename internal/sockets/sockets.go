// Package sockets creates and inspects the unix sockets nri-grpc listens on
// and dials.
package sockets

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// MaxPathLen is the longest unix socket path Linux accepts (sun_path is 108
// bytes including the terminating NUL).
const MaxPathLen = 107

// ListenOptions set the ownership and permissions of a listening socket.
type ListenOptions struct {
	// DirMode is the mode of the socket's directory when it has to be
	// created; 0 means 0o755.
	DirMode fs.FileMode
	// Mode is the mode of the socket file; 0 means 0o600.
	Mode fs.FileMode
	// GID, when not negative, is the group the socket is chowned to.
	GID int
}

// DefaultListenOptions are owner-only sockets in world-traversable
// directories.
var DefaultListenOptions = ListenOptions{DirMode: 0o755, Mode: 0o600, GID: -1}

// Listen listens on a unix socket at path, removing a stale socket file left
// by an earlier process (but never any other kind of file).
func Listen(path string, o ListenOptions) (*net.UnixListener, error) {
	if len(path) > MaxPathLen {
		return nil, fmt.Errorf("socket path %q is %d bytes, the limit is %d", path, len(path), MaxPathLen)
	}
	if o.DirMode == 0 {
		o.DirMode = 0o755
	}
	if o.Mode == 0 {
		o.Mode = 0o600
	}
	if err := os.MkdirAll(filepath.Dir(path), o.DirMode); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("%s is in use by another process", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, o.Mode); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	if o.GID >= 0 {
		if err := os.Chown(path, -1, o.GID); err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("chown socket: %w", err)
		}
	}
	return l, nil
}

// Target returns the gRPC dial target of a unix socket path.
func Target(path string) string { return "unix://" + path }

// PathOf returns the socket path of a "unix:///abs/path" or "unix:path"
// target, or of a bare absolute path.
func PathOf(target string) (string, error) {
	switch {
	case strings.HasPrefix(target, "unix://"):
		target = strings.TrimPrefix(target, "unix://")
	case strings.HasPrefix(target, "unix:"):
		target = strings.TrimPrefix(target, "unix:")
	}
	if !filepath.IsAbs(target) {
		return "", fmt.Errorf("%q is not an absolute unix socket path", target)
	}
	return filepath.Clean(target), nil
}
