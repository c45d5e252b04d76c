package peercred

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"sync"
)

// ConnState is what the server side of a connection saw of its peer's
// HTTP/2 frames and of how the connection ended, so that a server can tell
// a client that ended a stream (RST_STREAM), one that closed its connection
// (GOAWAY, then the end of the stream of bytes) and one whose connection
// broke (the bytes ended without either: the process was killed or
// crashed). gRPC reports all three to a server-side stream the same way, as
// its context canceled.
//
// What the frames say is recorded when the bytes are read, before gRPC
// acts on them: a stream's context canceled by a frame or by the end of the
// connection finds the cause already recorded.
type ConnState struct {
	mu        sync.Mutex
	maxStream uint32 // the highest stream id a HEADERS frame opened
	resets    uint64 // RST_STREAM frames received
	resetIDs  [16]uint32
	goAway    bool  // a GOAWAY frame was received
	readErr   error // how reading ended, when the peer ended it
}

// Mark is a point in a connection's history (ConnState.Mark).
type Mark struct {
	stream uint32 // the streams opened so far: ids up to stream
	resets uint64
}

// Mark returns the present point: the streams opened so far (the stream of
// the caller's call among them) and the RST_STREAM frames received so far.
func (s *ConnState) Mark() Mark {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Mark{stream: s.maxStream, resets: s.resets}
}

// Since tells what the peer did since m: reset is true when it reset
// (RST_STREAM) a stream opened before m — a client canceling its call —
// goAway when it sent GOAWAY (a client closing its connection), and readErr
// is how the connection's bytes ended when the peer ended them (io.EOF, a
// connection reset), nil while they go on or when this side closed it.
func (s *ConnState) Since(m Mark) (reset, goAway bool, readErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := m.resets; i < s.resets; i++ {
		if s.resets-i > uint64(len(s.resetIDs)) {
			continue // forgotten: too many resets since m
		}
		if id := s.resetIDs[i%uint64(len(s.resetIDs))]; id != 0 && id <= m.stream {
			reset = true
		}
	}
	return reset, s.goAway, s.readErr
}

// WatchConn starts watching the connection of a server-side call at the
// present point (Mark) and returns what the peer did since (Since); nil on
// the dialing side, whose connections are not watched. It makes Info a
// server.ConnWatcher, by which the server tells how a registration session
// ended.
func (i Info) WatchConn() func() (reset, goAway bool, readErr error) {
	st := i.conn
	if st == nil {
		return nil
	}
	m := st.Mark()
	return func() (bool, bool, error) { return st.Since(m) }
}

// HTTP/2 frame types (RFC 9113 §6).
const (
	frameHeaders   = 0x1
	frameRSTStream = 0x3
	frameGoAway    = 0x7
)

// clientPreface is what an HTTP/2 client sends before its first frame.
const clientPrefaceLen = len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

// watchedConn is a server-side connection whose reads feed its ConnState.
type watchedConn struct {
	net.Conn
	st *ConnState

	mu   sync.Mutex // the scan's state (reads may come from several goroutines)
	skip int        // bytes to skip: the preface, then a frame's payload
	hdr  [9]byte
	hdrN int
}

func watch(c net.Conn) (*watchedConn, *ConnState) {
	st := &ConnState{}
	return &watchedConn{Conn: c, st: st, skip: clientPrefaceLen}, st
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.scan(b[:n])
	}
	if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
		c.st.mu.Lock()
		if c.st.readErr == nil {
			c.st.readErr = err
		}
		c.st.mu.Unlock()
	}
	return n, err
}

// scan walks the frame headers in b, which continues what was read before.
func (c *watchedConn) scan(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(b) > 0 {
		if c.skip > 0 {
			k := min(c.skip, len(b))
			c.skip -= k
			b = b[k:]
			continue
		}
		k := copy(c.hdr[c.hdrN:], b)
		c.hdrN += k
		b = b[k:]
		if c.hdrN < len(c.hdr) {
			return
		}
		c.hdrN = 0
		c.skip = int(c.hdr[0])<<16 | int(c.hdr[1])<<8 | int(c.hdr[2])
		stream := binary.BigEndian.Uint32(c.hdr[5:9]) &^ (1 << 31)
		switch c.hdr[3] {
		case frameHeaders:
			c.st.mu.Lock()
			c.st.maxStream = max(c.st.maxStream, stream)
			c.st.mu.Unlock()
		case frameRSTStream:
			c.st.mu.Lock()
			c.st.resetIDs[c.st.resets%uint64(len(c.st.resetIDs))] = stream
			c.st.resets++
			c.st.mu.Unlock()
		case frameGoAway:
			c.st.mu.Lock()
			c.st.goAway = true
			c.st.mu.Unlock()
		}
	}
}
