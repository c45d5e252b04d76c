package classicwire_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/nri-grpc/nri-grpc/internal/classicwire"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
)

// frame builds a multiplexer frame carrying one ttrpc message.
func frame(conn, sid uint32, typ, flags byte, payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, conn)
	b = binary.BigEndian.AppendUint32(b, uint32(10+len(payload)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.BigEndian.AppendUint32(b, sid)
	b = append(b, typ, flags)
	return append(b, payload...)
}

// validRequest is a well-formed ttrpc request for the plugin service's
// CreateContainer with an empty payload, encoded field by field so that
// every length is right.
func validRequest() []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, "nri.pkg.api.v1alpha1.Plugin")
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, "CreateContainer")
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	return protowire.AppendBytes(b, nil)
}

// FuzzRead feeds arbitrary bytes to a connection as if the runtime sent
// them: whatever they are, the connection neither panics nor hangs — it
// answers what it can decode and ends on what it cannot. Input that starts
// with a whole valid request frame must reach the handler with its method.
func FuzzRead(f *testing.F) {
	req := validRequest()
	valid := frame(classicwire.PluginConn, 1, 1, 0, req)
	f.Add(valid)
	f.Add(append(append([]byte(nil), valid...), frame(classicwire.PluginConn, 3, 1, 0, req)...)) // two calls
	f.Add(frame(classicwire.PluginConn, 1, 1, 0, []byte{0xff, 0xff}))                            // undecodable request
	f.Add(frame(classicwire.RuntimeConn, 1, 2, 0, []byte{0x12, 0x00}))                           // response to no call
	f.Add(frame(7, 1, 1, 0, req))                                                                // unknown conn
	f.Add(frame(classicwire.PluginConn, 1, 1, 2, req))                                           // a stream
	f.Add(append(append([]byte(nil), valid[:20]...), 0, 0, 0, 1, 0xff))                          // cut short
	f.Add([]byte{0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff})                                            // oversized frame
	f.Fuzz(func(t *testing.T, data []byte) {
		runtime, plugin := net.Pipe()
		var (
			mu      sync.Mutex
			methods []string
		)
		c := classicwire.New(plugin, func(_ context.Context, method string, _ []byte) ([]byte, error) {
			mu.Lock()
			methods = append(methods, method)
			mu.Unlock()
			return []byte{0x08, 0x01}, nil
		})
		// Drain whatever the connection answers.
		go func() {
			buf := make([]byte, 4096)
			for {
				if _, err := runtime.Read(buf); err != nil {
					return
				}
			}
		}()
		_ = runtime.SetWriteDeadline(time.Now().Add(testwait.Bound()))
		_, _ = runtime.Write(data)
		_ = runtime.Close()
		select {
		case <-c.Done():
		case <-time.After(testwait.Bound()):
			t.Fatal("the connection did not end after its peer closed")
		}
		if bytes.HasPrefix(data, valid) {
			mu.Lock()
			defer mu.Unlock()
			if len(methods) == 0 || methods[0] != "CreateContainer" {
				t.Fatalf("a valid CreateContainer request reached the handler as %q", methods)
			}
		}
	})
}

// TestValidRequestReachesHandler: the fuzz target's valid seed really is
// one. The handler gets its method and payload, and the runtime gets the
// handler's answer as a ttrpc response on the same stream.
func TestValidRequestReachesHandler(t *testing.T) {
	runtime, plugin := net.Pipe()
	defer runtime.Close()
	got := make(chan string, 1)
	c := classicwire.New(plugin, func(_ context.Context, method string, payload []byte) ([]byte, error) {
		got <- fmt.Sprintf("%s %d", method, len(payload))
		return []byte{0x08, 0x01}, nil
	})
	defer c.Close()
	go func() { _, _ = runtime.Write(frame(classicwire.PluginConn, 1, 1, 0, validRequest())) }()
	if m := <-got; m != "CreateContainer 0" {
		t.Fatalf("handler got %q", m)
	}
	// The answer: a frame on the plugin connection, stream 1, type
	// response, whose ttrpc.Response carries the payload (field 2).
	hdr := make([]byte, 18)
	if _, err := io.ReadFull(runtime, hdr); err != nil {
		t.Fatal(err)
	}
	if conn, sid, typ := binary.BigEndian.Uint32(hdr[0:]), binary.BigEndian.Uint32(hdr[12:]), hdr[16]; conn != classicwire.PluginConn || sid != 1 || typ != 2 {
		t.Fatalf("answer frame: conn %d, stream %d, type %d", conn, sid, typ)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[8:]))
	if _, err := io.ReadFull(runtime, body); err != nil {
		t.Fatal(err)
	}
	if want := []byte{0x12, 0x02, 0x08, 0x01}; !bytes.Equal(body, want) {
		t.Fatalf("answer %x, want %x", body, want)
	}
}

// TestEmptyMessageEndingAFrameIsServedAtOnce: a message with an empty
// payload whose header ends its frame is handed on when the frame ends,
// not when the next frame on its conn arrives.
func TestEmptyMessageEndingAFrameIsServedAtOnce(t *testing.T) {
	runtime, plugin := net.Pipe()
	defer runtime.Close()
	got := make(chan string, 1)
	c := classicwire.New(plugin, func(_ context.Context, method string, _ []byte) ([]byte, error) {
		got <- method
		return nil, nil
	})
	defer c.Close()
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := runtime.Read(buf); err != nil {
				return
			}
		}
	}()
	go func() { _, _ = runtime.Write(frame(classicwire.PluginConn, 1, 1, 0, nil)) }()
	select {
	case m := <-got:
		if m != "" {
			t.Fatalf("handler got method %q for an empty request", m)
		}
	case <-time.After(testwait.Bound()):
		t.Fatal("the empty request was never served")
	}
}
