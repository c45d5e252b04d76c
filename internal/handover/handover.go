// Package handover moves a running nrid's listening sockets, its runtime
// connection and their state to a new nrid process on the same node (an
// upgrade or a restart without downtime). The old nrid serves a unix
// socket; the new one connects, asks, and receives the descriptors with
// SCM_RIGHTS and the state as bytes, then tells the old one whether it
// took them. The old one stops (or, on failure, goes on as before) and
// says goodbye when it is gone.
//
// The exchange on one stream connection, after the new nrid connected:
//
//	new → old: "NRID-TAKEOVER 1\n"
//	old → new: header (4-byte big-endian length, JSON {names, data_len}) with
//	           the descriptors attached, then data_len bytes of data
//	new → old: "OK\n", or "ERR <reason>\n"
//	old → new: "BYE\n" once it stopped (or the connection just closes)
package handover

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

const (
	request = "NRID-TAKEOVER 1\n"
	// MaxFiles bounds the descriptors of a package.
	MaxFiles = 16
	// MaxData bounds a package's data: the state of a node's pods and
	// containers fits many times over.
	MaxData   = 256 << 20
	maxHeader = 64 << 10
)

// ErrNoneRunning is Take's error when no nrid answers at the path.
var ErrNoneRunning = errors.New("handover: no running nrid to take over from")

// Package is what the old nrid hands over.
type Package struct {
	// Files are the descriptors, by name.
	Files map[string]*os.File
	// Data is the state that goes with them.
	Data []byte
}

// Close closes every file of the package.
func (p *Package) Close() {
	for _, f := range p.Files {
		_ = f.Close()
	}
}

type header struct {
	Names   []string `json:"names"`
	DataLen int      `json:"data_len"`
}

// Offer answers one takeover request on c (accepted from the old nrid's
// handover socket): it reads the request, calls prepare for the package,
// sends it, and returns whether the new nrid took it (nil) or why not. On
// success the caller stops and then calls Bye. prepare's package stays the
// caller's (to close or to take back).
func Offer(ctx context.Context, c *net.UnixConn, prepare func(context.Context) (*Package, error)) (*bufio.Reader, error) {
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	br := bufio.NewReaderSize(c, 512)
	line, err := readLine(br)
	if err != nil {
		return nil, fmt.Errorf("handover: reading the request: %w", err)
	}
	if line+"\n" != request {
		return nil, fmt.Errorf("handover: unknown request %q", line)
	}
	p, err := prepare(ctx)
	if err != nil {
		_, _ = c.Write([]byte("ERR " + oneLine(err.Error()) + "\n"))
		return nil, err
	}
	h := header{DataLen: len(p.Data)}
	var fds []int
	for name, f := range p.Files {
		h.Names = append(h.Names, name)
		fds = append(fds, int(f.Fd()))
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(hb)))
	msg = append(msg, hb...)
	if _, _, err := c.WriteMsgUnix(msg, syscall.UnixRights(fds...), nil); err != nil {
		return nil, fmt.Errorf("handover: sending the descriptors: %w", err)
	}
	if len(p.Data) > 0 {
		if _, err := c.Write(p.Data); err != nil {
			// The new nrid may have refused already: its reason first.
			if ack, rerr := readLine(br); rerr == nil && strings.HasPrefix(ack, "ERR ") {
				return nil, fmt.Errorf("handover: the new nrid refused: %s", strings.TrimPrefix(ack, "ERR "))
			}
			return nil, fmt.Errorf("handover: sending the state: %w", err)
		}
	}
	ack, err := readLine(br)
	if err != nil {
		return nil, fmt.Errorf("handover: the new nrid did not answer: %w", err)
	}
	if ack != "OK" {
		return nil, fmt.Errorf("handover: the new nrid refused: %s", strings.TrimPrefix(ack, "ERR "))
	}
	_ = c.SetDeadline(time.Time{})
	return br, nil
}

// Bye tells the new nrid that the old one is gone.
func Bye(c *net.UnixConn) {
	_, _ = c.Write([]byte("BYE\n"))
	_ = c.Close()
}

// Taken is a package received by the new nrid.
type Taken struct {
	*Package
	c  *net.UnixConn
	br *bufio.Reader
}

// Take connects to the old nrid's handover socket at path and receives its
// package. It returns ErrNoneRunning when nothing listens there. The
// caller answers with Accept or Refuse.
func Take(ctx context.Context, path string) (*Taken, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, ErrNoneRunning
		}
		return nil, fmt.Errorf("handover: %w", err)
	}
	c := conn.(*net.UnixConn)
	ok := false
	defer func() {
		if !ok {
			_ = c.Close()
		}
	}()
	if dl, has := ctx.Deadline(); has {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte(request)); err != nil {
		return nil, fmt.Errorf("handover: asking: %w", err)
	}
	var lb [4]byte
	oob := make([]byte, syscall.CmsgSpace(MaxFiles*4))
	n, oobn, _, _, err := c.ReadMsgUnix(lb[:], oob)
	if err != nil {
		return nil, fmt.Errorf("handover: receiving: %w", err)
	}
	files, ferr := parseRights(oob[:oobn])
	p := &Package{Files: map[string]*os.File{}}
	defer func() {
		if !ok {
			for _, f := range files {
				_ = f.Close()
			}
		}
	}()
	br := bufio.NewReader(c)
	if _, err := io.ReadFull(br, lb[n:]); err != nil {
		return nil, fmt.Errorf("handover: receiving: %w", err)
	}
	// "ERR " read as a length is over a gigabyte: a refusal is unambiguous.
	if string(lb[:]) == "ERR " {
		rest, _ := readLine(br)
		return nil, fmt.Errorf("handover: the running nrid refused: %s", rest)
	}
	if ferr != nil {
		return nil, ferr
	}
	hl := binary.BigEndian.Uint32(lb[:])
	if hl > maxHeader {
		return nil, fmt.Errorf("handover: header of %d bytes", hl)
	}
	hb := make([]byte, hl)
	if _, err := io.ReadFull(br, hb); err != nil {
		return nil, fmt.Errorf("handover: receiving: %w", err)
	}
	var h header
	if err := json.Unmarshal(hb, &h); err != nil {
		return nil, fmt.Errorf("handover: header: %w", err)
	}
	if len(h.Names) != len(files) || h.DataLen < 0 || h.DataLen > MaxData {
		return nil, fmt.Errorf("handover: %d names for %d descriptors, %d bytes of data", len(h.Names), len(files), h.DataLen)
	}
	for i, name := range h.Names {
		p.Files[name] = files[i]
	}
	p.Data = make([]byte, h.DataLen)
	if _, err := io.ReadFull(br, p.Data); err != nil {
		return nil, fmt.Errorf("handover: receiving the state: %w", err)
	}
	ok = true
	_ = c.SetDeadline(time.Time{})
	return &Taken{Package: p, c: c, br: br}, nil
}

// Accept tells the old nrid that the new one took the package: the old
// one stops. Gone is closed when it has.
func (t *Taken) Accept() (gone <-chan struct{}, err error) {
	if _, err := t.c.Write([]byte("OK\n")); err != nil {
		_ = t.c.Close()
		return nil, fmt.Errorf("handover: answering: %w", err)
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		defer func() { _ = t.c.Close() }()
		_, _ = readLine(t.br) // BYE, or the end of the connection
	}()
	return ch, nil
}

// Refuse tells the old nrid that the new one could not take the package:
// the old one goes on. The package's files are closed.
func (t *Taken) Refuse(reason error) {
	t.Close()
	_, _ = t.c.Write([]byte("ERR " + oneLine(reason.Error()) + "\n"))
	_ = t.c.Close()
}

func parseRights(oob []byte) ([]*os.File, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("handover: control message: %w", err)
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			syscall.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "handover"))
		}
	}
	return files, nil
}

func readLine(br *bufio.Reader) (string, error) {
	var b []byte
	for len(b) < 4096 {
		c, err := br.ReadByte()
		if err != nil {
			return string(b), err
		}
		if c == '\n' {
			return string(b), nil
		}
		b = append(b, c)
	}
	return string(b), errors.New("line too long")
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 1024 {
		s = s[:1024]
	}
	return s
}
