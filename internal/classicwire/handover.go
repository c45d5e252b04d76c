package classicwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// ErrDetached is why a connection ended that Detach handed over.
var ErrDetached = errors.New("classicwire: connection handed over")

// Detached is a connection stopped by Detach, ready for Adopt by the next
// owner (another Conn, in this process or another one): the socket, the
// bytes read from it but not processed yet, and the next stream id of the
// plugin's calls. The runtime sees nothing of the change.
type Detached struct {
	// File is a duplicate of the socket's descriptor; the caller owns it.
	File *os.File
	// Pending are the bytes the reader took from the socket and had not
	// processed: the next owner processes them first.
	Pending []byte
	// NextID is the stream id of the next call to the runtime (ttrpc
	// stream ids must keep increasing on a connection).
	NextID uint32
	// Stopped is when the reader stopped: a request the runtime sent since
	// has waited in the socket from then on, at the latest, and the
	// runtime's timeout for it runs meanwhile.
	Stopped time.Time
}

// Detach hands the connection over without closing the socket: it refuses
// new calls to the runtime, waits for the calls in flight to be answered
// (until ctx is done), waits for the runtime's request being served (the
// reader serves one at a time), stops the reader wherever it is in the
// stream, and ends the Conn with ErrDetached (Done, OnClose). The runtime
// keeps its connection: frames it sends from now on wait in the socket
// for the next owner, who processes Detached.Pending first.
//
// The socket must support File (a *net.UnixConn or *net.TCPConn). When
// Detach fails, the connection goes on as before, unless it failed for
// good meanwhile.
func (c *Conn) Detach(ctx context.Context) (*Detached, error) {
	fc, ok := c.trunk.(interface{ File() (*os.File, error) })
	if !ok {
		return nil, fmt.Errorf("classicwire: a %T cannot be handed over", c.trunk)
	}
	c.mu.Lock()
	if c.calls == nil {
		err := c.err
		c.mu.Unlock()
		return nil, fmt.Errorf("classicwire: connection closed: %w", err)
	}
	if !c.detaching.CompareAndSwap(false, true) {
		c.mu.Unlock()
		return nil, errors.New("classicwire: already being handed over")
	}
	c.detached = make(chan []byte, 1)
	var drained chan struct{}
	if len(c.calls) > 0 {
		c.drained = make(chan struct{})
		drained = c.drained
	}
	c.mu.Unlock()
	undo := func() {
		c.mu.Lock()
		c.drained = nil
		c.mu.Unlock()
		c.detaching.Store(false)
	}
	if drained != nil {
		select {
		case <-drained:
		case <-c.done:
			return nil, fmt.Errorf("classicwire: connection closed: %w", c.Err())
		case <-ctx.Done():
			undo()
			return nil, fmt.Errorf("classicwire: calls to the runtime still in flight: %w", ctx.Err())
		}
	}
	f, err := fc.File()
	if err != nil {
		undo()
		return nil, fmt.Errorf("classicwire: duplicating the socket: %w", err)
	}
	// The reader stops at its next read: at once if it waits for the
	// runtime, after the answer if it serves a request.
	if err := c.trunk.SetReadDeadline(time.Unix(1, 0)); err != nil {
		_ = f.Close()
		undo()
		return nil, fmt.Errorf("classicwire: stopping the reader: %w", err)
	}
	select {
	case pending := <-c.detached:
		stopped := time.Now()
		c.mu.Lock()
		next := c.nextID
		c.mu.Unlock()
		c.fail(ErrDetached) // closes this process's descriptor only
		return &Detached{File: f, Pending: pending, NextID: next, Stopped: stopped}, nil
	case <-c.done:
		_ = f.Close()
		return nil, fmt.Errorf("classicwire: connection closed: %w", c.Err())
	}
}

// callEnded signals Detach when the last call in flight ended; c.mu is
// held.
func (c *Conn) callEnded() {
	if c.drained != nil && len(c.calls) == 0 {
		close(c.drained)
		c.drained = nil
	}
}

// Adopt continues a connection that Detach handed over, in this process
// or another one that received its descriptor: d.Pending is processed
// first, then the socket. The Conn owns d.File from now on (Adopt closes
// it, having made a connection of it), also when it fails.
func Adopt(d *Detached, h Handler, opts ...Option) (*Conn, error) {
	nc, err := net.FileConn(d.File)
	_ = d.File.Close()
	if err != nil {
		return nil, fmt.Errorf("classicwire: adopting the socket: %w", err)
	}
	if d.NextID%2 != 1 {
		_ = nc.Close()
		return nil, fmt.Errorf("classicwire: next stream id %d is not odd", d.NextID)
	}
	c := newConn(nc, h, opts)
	c.nextID = d.NextID
	if len(d.Pending) > 0 {
		c.rs.src = bytes.NewReader(d.Pending)
		c.rs.br = bufio.NewReaderSize(io.MultiReader(c.rs.src, nc), 64<<10)
	}
	go c.read()
	return c, nil
}

// pending returns what the reader read and did not process, as a stream
// that leaves a new reader in the same place: each connection's partial
// message as a frame of its own, then the rest of the frame being read
// (under a new header) or the part of the frame header read, then the
// bytes buffered but not read yet.
func (st *readState) pending() []byte {
	var out []byte
	frame := func(id uint32, n int) {
		out = binary.BigEndian.AppendUint32(out, id)
		out = binary.BigEndian.AppendUint32(out, uint32(n))
	}
	for i := range st.asm {
		a := &st.asm[i]
		if n := a.nhdr + a.got; n > 0 {
			frame(uint32(i+1), n)
			out = append(out, a.hdr[:a.nhdr]...)
			out = append(out, a.msg[:a.got]...)
		}
	}
	switch {
	case st.inFrame && st.left > 0:
		frame(st.id, st.left)
	case !st.inFrame:
		out = append(out, st.hdr[:st.nhdr]...)
	}
	if n := st.br.Buffered(); n > 0 {
		b, _ := st.br.Peek(n)
		out = append(out, b...)
	}
	if st.src != nil && st.src.Len() > 0 {
		rest, _ := io.ReadAll(st.src)
		out = append(out, rest...)
	}
	return out
}
