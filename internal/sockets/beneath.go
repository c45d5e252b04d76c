package sockets

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Errors of DialBeneath, wrapped with the path they concern: test them with
// errors.Is.
var (
	// ErrNotBeneath is a relative path that is empty, absolute, or has an
	// empty, "." or ".." component.
	ErrNotBeneath = errors.New("is not a plain relative path beneath the directory")
	// ErrSymlink is a symbolic link on the way to the socket, or the socket
	// path itself being one.
	ErrSymlink = errors.New("is a symbolic link, which is never followed")
	// ErrNotDirectory is an intermediate component that is not a directory.
	ErrNotDirectory = errors.New("is not a directory")
	// ErrNotSocket is a final component that is not a unix socket.
	ErrNotSocket = errors.New("is not a unix socket")
	// ErrOwner is a socket file owned by another uid than OwnedBy's.
	ErrOwner = errors.New("is owned by another uid")
)

// SocketFile is what DialBeneath learned about the socket file, from the
// descriptor it then connects through.
type SocketFile struct {
	// Path is the directory joined with the relative path, for messages
	// only: nothing is ever opened by this name.
	Path string
	// UID and GID own the file.
	UID, GID uint32
	// Mode is fs.ModeSocket and the permission bits.
	Mode fs.FileMode
}

// BeneathOption configures DialBeneath.
type BeneathOption func(*beneathOptions)

type beneathOptions struct {
	checks []func(SocketFile) error
}

// OwnedBy refuses a socket file that uid does not own (ErrOwner), before
// connecting to it.
func OwnedBy(uid uint32) BeneathOption {
	return CheckFile(func(f SocketFile) error {
		if f.UID != uid {
			return fmt.Errorf("%s: %w: uid %d, want uid %d", f.Path, ErrOwner, f.UID, uid)
		}
		return nil
	})
}

// CheckFile adds a check of the socket file: a non-nil error refuses it
// before connecting, and DialBeneath returns that error.
func CheckFile(check func(SocketFile) error) BeneathOption {
	return func(o *beneathOptions) { o.checks = append(o.checks, check) }
}

// DialBeneath connects to the unix socket at rel beneath dir without ever
// following a symbolic link below dir, and runs the checks of opts on the
// socket file before connecting.
//
// dir is trusted (it comes from the configuration) and is opened as it is,
// symbolic links included. rel is not: it is resolved one component at a
// time with openat(2) and O_PATH|O_NOFOLLOW from the descriptor of the
// previous one, so neither a symbolic link nor ".." can lead out of dir
// (ErrSymlink, ErrNotBeneath); intermediate components must be directories
// (ErrNotDirectory). The descriptor of the last component must be a socket
// (ErrNotSocket) and pass the checks; the connection is then made through
// "/proc/self/fd/N" of that very descriptor, so what was checked is what is
// connected to, whatever happens to the names meanwhile. This needs /proc.
//
// The caller still checks the peer credentials of the returned connection
// (the process listening on the socket) if it cares who serves it.
func DialBeneath(ctx context.Context, dir, rel string, opts ...BeneathOption) (*net.UnixConn, error) {
	var o beneathOptions
	for _, opt := range opts {
		opt(&o)
	}
	parts, err := splitBeneath(rel)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fd, path, err := openBeneath(dir, parts)
	if err != nil {
		return nil, err
	}
	defer func() { _ = unix.Close(fd) }() // an O_PATH descriptor: nothing to flush
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFSOCK:
	case unix.S_IFLNK:
		return nil, fmt.Errorf("%s: %w", path, ErrSymlink)
	default:
		return nil, fmt.Errorf("%s: %w: it is a %s", path, ErrNotSocket, fileKind(st.Mode))
	}
	f := SocketFile{Path: path, UID: st.Uid, GID: st.Gid, Mode: fs.ModeSocket | fs.FileMode(st.Mode&0o777)}
	for _, check := range o.checks {
		if err := check(f); err != nil {
			return nil, err
		}
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
	if err != nil {
		var errno unix.Errno
		if errors.As(err, &errno) {
			err = errno
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("connect %s through /proc/self/fd (is /proc mounted?): %w", path, err)
		}
		return nil, fmt.Errorf("connect %s: %w", path, err)
	}
	return c.(*net.UnixConn), nil
}

// splitBeneath splits rel into its components, refusing any that could
// leave the directory or that a clean path would not have.
func splitBeneath(rel string) ([]string, error) {
	if rel == "" || strings.HasPrefix(rel, "/") {
		return nil, fmt.Errorf("%q: %w", rel, ErrNotBeneath)
	}
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, fmt.Errorf("%q: %w", rel, ErrNotBeneath)
		}
	}
	return parts, nil
}

// openBeneath opens dir, then each of parts below it with O_PATH and
// O_NOFOLLOW, and returns the O_PATH descriptor of the last one and its
// path (for messages).
func openBeneath(dir string, parts []string) (fd int, path string, err error) {
	cur, err := openat(unix.AT_FDCWD, dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return -1, dir, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	path = dir
	for i, part := range parts {
		flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		}
		next := filepath.Join(path, part)
		fd, err := openat(cur, part, flags)
		if err != nil {
			err = openError(cur, part, next, err)
			_ = unix.Close(cur)
			return -1, next, err
		}
		_ = unix.Close(cur)
		cur, path = fd, next
	}
	return cur, path, nil
}

// openError explains a failed openat of name in dirfd: a symbolic link
// where a directory was expected gives ENOTDIR (O_NOFOLLOW|O_DIRECTORY), so
// the entry is looked at again to say which it is.
func openError(dirfd int, name, path string, err error) error {
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return fmt.Errorf("%s: %w", path, ErrSymlink)
			}
			return fmt.Errorf("%s: %w: it is a %s", path, ErrNotDirectory, fileKind(st.Mode))
		}
	}
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// fileKind names the file type of a stat mode.
func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "regular file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFLNK:
		return "symbolic link"
	case unix.S_IFSOCK:
		return "socket"
	}
	return "file of unknown type"
}
