// Package classicwire speaks classic NRI's transport from a plugin's end:
// ttrpc messages carried by the connection multiplexer of
// github.com/containerd/nri (pkg/net/multiplex) over one unix socket. The
// runtime calls the plugin on one multiplexed connection and the plugin
// calls the runtime on the other.
//
// It exists for the bridge's runtime side, where every classic event pays
// for this transport on top of the gRPC hop to the plugins. The upstream
// stack (pkg/stub over the multiplexer and a ttrpc server) hands every
// request through four goroutines — the multiplexer's reader, the ttrpc
// connection's reader, a goroutine per request and the connection's
// response writer — and writes every frame with two system calls. Conn
// reads the socket through one buffered reader, serves each of the
// runtime's calls on the reading goroutine itself (a classic runtime sends
// one call at a time: it holds its lock while it waits for the answer) and
// writes each answer with one system call.
//
// The wire format, for reference (all integers big-endian):
//
//	multiplexer frame: conn id (4 bytes) | length (4 bytes) | bytes of that conn's stream
//	ttrpc message:     length (4) | stream id (4) | type (1: request, 2: response, 3: data) | flags (1) | payload
//	request payload:   ttrpc.Request  {service = 1, method = 2, payload = 3, timeout_nano = 4, metadata = 5}
//	response payload:  ttrpc.Response {status = 1 (google.rpc.Status), payload = 2}
//
// Connection 1 carries the runtime's calls to the plugin (PluginService),
// connection 2 the plugin's calls to the runtime (Runtime). Client stream
// ids are odd and increasing.
package classicwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// The multiplexed connections and the framing constants of the protocol.
const (
	// PluginConn is the connection the runtime calls the plugin on.
	PluginConn = 1
	// RuntimeConn is the connection the plugin calls the runtime on.
	RuntimeConn = 2

	muxHeaderLen = 8
	msgHeaderLen = 10
	// MaxMessage is ttrpc's limit on a message's payload.
	MaxMessage = 4 << 20
	// maxFrame is the multiplexer's limit on a frame's payload.
	maxFrame = msgHeaderLen + MaxMessage

	typeRequest  = 1
	typeResponse = 2

	// RuntimeService is the ttrpc service of the runtime's end.
	RuntimeService = "nri.pkg.api.v1alpha1.Runtime"
)

// Handler serves one of the runtime's calls: method is the method's name
// ("CreateContainer") and payload its encoded request; it returns the
// encoded response, or an error that the runtime receives as a status
// (gRPC status errors keep their code). payload belongs to the call and is
// never reused: a handler may keep it, and strings decoded from it may
// alias it. ctx carries the call's deadline and its ttrpc metadata
// (ttrpc.GetMetadata).
type Handler func(ctx context.Context, method string, payload []byte) ([]byte, error)

// Conn is a plugin's end of a classic NRI connection.
type Conn struct {
	trunk   net.Conn
	handler Handler
	log     *slog.Logger
	onClose func()

	wmu sync.Mutex // serializes writes to trunk
	rs  readState  // the reader's, and Detach's once the reader stopped

	detaching atomic.Bool   // Detach is stopping the reader
	detached  chan []byte   // the reader's pending bytes, once it stopped for Detach
	drained   chan struct{} // closed when the last pending call ends during Detach

	mu     sync.Mutex
	nextID uint32
	calls  map[uint32]chan []byte // pending calls on RuntimeConn, by stream id
	err    error

	done      chan struct{}
	closeOnce sync.Once
}

// Option configures a Conn.
type Option func(*Conn)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *Conn) { c.log = l } }

// WithOnClose sets a function called once when the connection ends, for
// whatever reason.
func WithOnClose(f func()) Option { return func(c *Conn) { c.onClose = f } }

// New serves the runtime's calls on trunk with h and starts reading; the
// connection lives until Close or the first read or write error.
func New(trunk net.Conn, h Handler, opts ...Option) *Conn {
	c := newConn(trunk, h, opts)
	go c.read()
	return c
}

func newConn(trunk net.Conn, h Handler, opts []Option) *Conn {
	c := &Conn{
		trunk:   trunk,
		handler: h,
		log:     slog.Default(),
		nextID:  1,
		calls:   map[uint32]chan []byte{},
		done:    make(chan struct{}),
	}
	for _, o := range opts {
		o(c)
	}
	c.rs.br = bufio.NewReaderSize(trunk, 64<<10)
	return c
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended (nil while it is open).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection.
func (c *Conn) Close() error {
	c.fail(net.ErrClosed)
	return nil
}

// fail ends the connection with err: the socket is closed, pending calls
// fail and the close callback runs.
func (c *Conn) fail(err error) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.err = err
		calls := c.calls
		c.calls = nil
		c.mu.Unlock()
		_ = c.trunk.Close()
		for _, ch := range calls {
			close(ch)
		}
		close(c.done)
		if c.onClose != nil {
			c.onClose()
		}
	})
}

// read is the connection's only reader: it reassembles each multiplexed
// connection's stream into ttrpc messages, serves requests on
// PluginConn and delivers responses on RuntimeConn.
//
// Frames are read straight into the messages they carry: once a message's
// header is complete, its payload is allocated whole and every later frame's
// bytes are copied into place, so reassembly costs one copy of each byte
// however the runtime cuts the stream. Every message gets a buffer of its
// own that is handed over and never written again (handlers keep it).
//
// Everything read is accounted for in c.rs, so that Detach can stop the
// reader at any byte and hand what it read but did not process to the
// next owner of the socket (handover.go).
func (c *Conn) read() {
	st := &c.rs
	for {
		if !st.inFrame {
			k, err := io.ReadFull(st.br, st.hdr[st.nhdr:])
			st.nhdr += k
			if err != nil {
				c.readFailed(err)
				return
			}
			st.nhdr = 0
			id, n := binary.BigEndian.Uint32(st.hdr[0:4]), binary.BigEndian.Uint32(st.hdr[4:8])
			if n > maxFrame {
				c.fail(fmt.Errorf("classicwire: conn %d: frame of %d bytes, the maximum is %d", id, n, maxFrame))
				return
			}
			st.id, st.left, st.inFrame = id, int(n), true
		}
		if st.id != PluginConn && st.id != RuntimeConn {
			// Like the multiplexer: frames for unknown conns are dropped.
			k, err := st.br.Discard(st.left)
			st.left -= k
			if err != nil {
				c.readFailed(inFrame(err))
				return
			}
			st.inFrame = false
			continue
		}
		a := &st.asm[st.id-1]
		for {
			if a.nhdr == msgHeaderLen && a.msg == nil {
				l := binary.BigEndian.Uint32(a.hdr[0:4])
				if l > MaxMessage {
					c.fail(fmt.Errorf("classicwire: conn %d: message of %d bytes, the maximum is %d", st.id, l, MaxMessage))
					return
				}
				a.msg = make([]byte, l)
			}
			// A complete message is handed on at once, even one whose
			// header (with an empty payload) ends the frame.
			if a.msg == nil || a.got < len(a.msg) {
				if st.left == 0 {
					break
				}
				k, err := a.fill(st.br, st.left)
				st.left -= k
				if err != nil {
					c.readFailed(inFrame(err))
					return
				}
				continue
			}
			sid, typ, flags := binary.BigEndian.Uint32(a.hdr[4:8]), a.hdr[8], a.hdr[9]
			msg := a.msg
			*a = assembly{}
			switch {
			case st.id == PluginConn && typ == typeRequest:
				if err := c.serve(sid, flags, msg); err != nil {
					c.fail(err)
					return
				}
			case st.id == RuntimeConn && typ == typeResponse:
				c.deliver(sid, msg)
			default:
				c.log.Debug("classicwire: message ignored", "conn", st.id, "stream", sid, "type", typ)
			}
		}
		st.inFrame = false
	}
}

// readState is where the reader is in the stream: the frame header being
// read, the frame being read, and each connection's partial message.
type readState struct {
	br      *bufio.Reader
	src     *bytes.Reader // bytes a previous owner read but did not process (Adopt); nil if none
	hdr     [muxHeaderLen]byte
	nhdr    int    // bytes of hdr read, while !inFrame
	inFrame bool   // a frame's header was read and its bytes are being read
	id      uint32 // the frame's conn
	left    int    // the frame's bytes not read yet
	asm     [2]assembly
}

// readFailed ends the reader on err: the connection fails, unless Detach
// stopped the reader, which then hands its state over.
func (c *Conn) readFailed(err error) {
	if c.detaching.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
		c.detached <- c.rs.pending()
		return
	}
	c.fail(readError(err))
}

// assembly is the ttrpc message being received on one multiplexed
// connection: its header, then its payload.
type assembly struct {
	hdr  [msgHeaderLen]byte
	nhdr int    // bytes of hdr received
	msg  []byte // the payload, allocated whole once the header is complete
	got  int    // bytes of msg received
}

// fill reads from r, at most limit bytes, into what the message lacks: the
// rest of its header or of its payload. It returns how many bytes it read.
func (a *assembly) fill(r io.Reader, limit int) (int, error) {
	var dst []byte
	if a.nhdr < msgHeaderLen {
		dst = a.hdr[a.nhdr:]
	} else {
		dst = a.msg[a.got:]
	}
	dst = dst[:min(len(dst), limit)]
	k, err := io.ReadFull(r, dst)
	if a.nhdr < msgHeaderLen {
		a.nhdr += k
	} else {
		a.got += k
	}
	return k, err
}

// inFrame is the error of a read inside a frame: the end of the stream
// there is unexpected, wherever in the frame it comes.
func inFrame(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func readError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return io.EOF
	}
	return fmt.Errorf("classicwire: reading: %w", err)
}

// serve answers one request of the runtime; only a failure to write the
// answer is returned.
func (c *Conn) serve(sid uint32, flags uint8, msg []byte) error {
	req, err := decodeRequest(msg)
	var payload []byte
	switch {
	case err != nil:
		err = status.Errorf(codes.InvalidArgument, "classicwire: undecodable request: %v", err)
	case flags != 0:
		err = status.Errorf(codes.Unimplemented, "classicwire: %s/%s: streams are not supported", req.service, req.method)
	default:
		ctx := context.Background()
		if len(req.md) > 0 {
			ctx = ttrpc.WithMetadata(ctx, req.md)
		}
		cancel := context.CancelFunc(func() {})
		if req.timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, req.timeout)
		}
		payload, err = c.handler(ctx, req.method, req.payload)
		cancel()
	}
	return c.write(PluginConn, sid, typeResponse, encodeResponse(payload, err))
}

// deliver hands a response to the call waiting for it.
func (c *Conn) deliver(sid uint32, msg []byte) {
	c.mu.Lock()
	ch := c.calls[sid]
	delete(c.calls, sid)
	c.callEnded()
	c.mu.Unlock()
	if ch != nil {
		ch <- msg
	}
}

// write sends one ttrpc message on a multiplexed connection: the frame
// header, the message header and the payload in one system call (a message
// within ttrpc's limit always fits one frame).
func (c *Conn) write(conn, sid uint32, typ uint8, payload []byte) error {
	if len(payload) > MaxMessage {
		return fmt.Errorf("classicwire: message of %d bytes, the maximum is %d", len(payload), MaxMessage)
	}
	frame := make([]byte, 0, muxHeaderLen+msgHeaderLen+len(payload))
	frame = binary.BigEndian.AppendUint32(frame, conn)
	frame = binary.BigEndian.AppendUint32(frame, uint32(msgHeaderLen+len(payload)))
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(payload)))
	frame = binary.BigEndian.AppendUint32(frame, sid)
	frame = append(frame, typ, 0)
	frame = append(frame, payload...)
	c.wmu.Lock()
	_, err := c.trunk.Write(frame)
	c.wmu.Unlock()
	if err != nil {
		err = fmt.Errorf("classicwire: writing: %w", err)
		c.fail(err)
	}
	return err
}

// Call calls method of the runtime (RuntimeService) with req and decodes
// the answer into rsp. The runtime's error statuses come back as gRPC
// status errors.
func (c *Conn) Call(ctx context.Context, method string, req, rsp vtMessage) error {
	b, err := req.MarshalVT()
	if err != nil {
		return fmt.Errorf("classicwire: encoding %s: %w", method, err)
	}
	var timeout time.Duration
	if d, ok := ctx.Deadline(); ok {
		if timeout = time.Until(d); timeout <= 0 {
			return status.FromContextError(context.DeadlineExceeded).Err()
		}
	}
	ch := make(chan []byte, 1)
	c.mu.Lock()
	if c.calls == nil {
		err := c.err
		c.mu.Unlock()
		return status.Errorf(codes.Unavailable, "classicwire: connection closed: %v", err)
	}
	if c.detaching.Load() {
		c.mu.Unlock()
		return status.Error(codes.Unavailable, "classicwire: the connection is being handed over")
	}
	sid := c.nextID
	c.nextID += 2
	c.calls[sid] = ch
	c.mu.Unlock()
	if err := c.write(RuntimeConn, sid, typeRequest, encodeRequest(RuntimeService, method, b, timeout, ttrpcMD(ctx))); err != nil {
		return status.Errorf(codes.Unavailable, "%v", err)
	}
	select {
	case msg, ok := <-ch:
		if !ok {
			return status.Errorf(codes.Unavailable, "classicwire: connection closed: %v", c.Err())
		}
		payload, st, err := decodeResponse(msg)
		if err != nil {
			return status.Errorf(codes.Internal, "classicwire: undecodable response to %s: %v", method, err)
		}
		if st != nil && st.Code() != codes.OK {
			return st.Err()
		}
		if err := rsp.UnmarshalVT(payload); err != nil {
			return status.Errorf(codes.Internal, "classicwire: decoding the response to %s: %v", method, err)
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.calls, sid)
		c.callEnded()
		c.mu.Unlock()
		return status.FromContextError(ctx.Err()).Err()
	}
}

// vtMessage is a message with vtprotobuf's coder (the v1alpha1 types have it).
type vtMessage interface {
	MarshalVT() ([]byte, error)
	UnmarshalVT([]byte) error
}

func ttrpcMD(ctx context.Context) ttrpc.MD {
	md, _ := ttrpc.GetMetadata(ctx)
	return md
}

// request is a decoded ttrpc.Request.
type request struct {
	service, method string
	payload         []byte
	timeout         time.Duration
	md              ttrpc.MD
}

// decodeRequest decodes a ttrpc.Request; payload aliases b.
func decodeRequest(b []byte) (request, error) {
	var r request
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			r.service = string(v)
		case num == 2 && typ == protowire.BytesType:
			r.method = string(v)
		case num == 3 && typ == protowire.BytesType:
			r.payload = v
		case num == 4 && typ == protowire.VarintType:
			r.timeout = time.Duration(int64(x))
		case num == 5 && typ == protowire.BytesType:
			var k, val string
			if err := fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if typ == protowire.BytesType {
					switch num {
					case 1:
						k = string(v)
					case 2:
						val = string(v)
					}
				}
				return nil
			}); err != nil {
				return err
			}
			if r.md == nil {
				r.md = ttrpc.MD{}
			}
			r.md[k] = append(r.md[k], val)
		}
		return nil
	})
	return r, err
}

// encodeRequest encodes a ttrpc.Request.
func encodeRequest(service, method string, payload []byte, timeout time.Duration, md ttrpc.MD) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, service)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, method)
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	b = protowire.AppendBytes(b, payload)
	if timeout > 0 {
		b = protowire.AppendTag(b, 4, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(timeout))
	}
	for k, vs := range md {
		for _, v := range vs {
			var kv []byte
			kv = protowire.AppendTag(kv, 1, protowire.BytesType)
			kv = protowire.AppendString(kv, k)
			kv = protowire.AppendTag(kv, 2, protowire.BytesType)
			kv = protowire.AppendString(kv, v)
			b = protowire.AppendTag(b, 5, protowire.BytesType)
			b = protowire.AppendBytes(b, kv)
		}
	}
	return b
}

// encodeResponse encodes a ttrpc.Response: the payload, or err as a
// google.rpc.Status.
func encodeResponse(payload []byte, err error) []byte {
	if err != nil {
		st := status.Convert(err).Proto()
		var sb []byte
		if st.Code != 0 {
			sb = protowire.AppendTag(sb, 1, protowire.VarintType)
			sb = protowire.AppendVarint(sb, uint64(int64(st.Code)))
		}
		if st.Message != "" {
			sb = protowire.AppendTag(sb, 2, protowire.BytesType)
			sb = protowire.AppendString(sb, st.Message)
		}
		for _, d := range st.Details {
			db, merr := proto.Marshal(d)
			if merr != nil {
				continue
			}
			sb = protowire.AppendTag(sb, 3, protowire.BytesType)
			sb = protowire.AppendBytes(sb, db)
		}
		b := protowire.AppendTag(nil, 1, protowire.BytesType)
		return protowire.AppendBytes(b, sb)
	}
	b := protowire.AppendTag(make([]byte, 0, len(payload)+6), 2, protowire.BytesType)
	return protowire.AppendBytes(b, payload)
}

// decodeResponse decodes a ttrpc.Response.
func decodeResponse(b []byte) ([]byte, *status.Status, error) {
	var (
		payload []byte
		st      *status.Status
	)
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			var (
				code    int32
				msg     string
				details []*anypb.Any
			)
			if err := fields(v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
				switch {
				case num == 1 && typ == protowire.VarintType:
					code = int32(x)
				case num == 2 && typ == protowire.BytesType:
					msg = string(v)
				case num == 3 && typ == protowire.BytesType:
					a := &anypb.Any{}
					if err := proto.Unmarshal(v, a); err != nil {
						return err
					}
					details = append(details, a)
				}
				return nil
			}); err != nil {
				return err
			}
			st = status.New(codes.Code(code), msg)
			if len(details) > 0 {
				p := st.Proto()
				p.Details = details
				st = status.FromProto(p)
			}
		case num == 2 && typ == protowire.BytesType:
			payload = v
		}
		return nil
	})
	return payload, st, err
}

// fields walks the fields of an encoded message: v is a length-delimited
// field's bytes, x a varint field's value; other wire types are skipped.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var (
			v []byte
			x uint64
		)
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}
