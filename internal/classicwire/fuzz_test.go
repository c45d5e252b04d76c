package classicwire_test

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/nri-grpc/nri-grpc/internal/classicwire"
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

// FuzzRead feeds arbitrary bytes to a connection as if the runtime sent
// them: whatever they are, the connection neither panics nor hangs — it
// answers what it can decode and ends on what it cannot.
func FuzzRead(f *testing.F) {
	// A well-formed CreateContainer request (service, method, empty payload).
	req := []byte{0x0a, 0x1c}
	req = append(req, "nri.pkg.api.v1alpha1.Plugin"...)
	req = append(req, 0x12, 0x0f)
	req = append(req, "CreateContainer"...)
	f.Add(frame(classicwire.PluginConn, 1, 1, 0, req))
	f.Add(frame(classicwire.PluginConn, 1, 1, 0, []byte{0xff, 0xff}))                 // undecodable request
	f.Add(frame(classicwire.RuntimeConn, 1, 2, 0, []byte{0x12, 0x00}))                // response to no call
	f.Add(frame(7, 1, 1, 0, req))                                                     // unknown conn
	f.Add(frame(classicwire.PluginConn, 1, 1, 2, req))                                // a stream
	f.Add(append(frame(classicwire.PluginConn, 1, 1, 0, req)[:20], 0, 0, 0, 1, 0xff)) // cut short
	f.Add([]byte{0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff})                                 // oversized frame
	f.Fuzz(func(t *testing.T, data []byte) {
		runtime, plugin := net.Pipe()
		c := classicwire.New(plugin, func(context.Context, string, []byte) ([]byte, error) { return []byte{0x08, 0x01}, nil })
		// Drain whatever the connection answers.
		go func() {
			buf := make([]byte, 4096)
			for {
				if _, err := runtime.Read(buf); err != nil {
					return
				}
			}
		}()
		_ = runtime.SetWriteDeadline(time.Now().Add(2 * time.Second))
		_, _ = runtime.Write(data)
		_ = runtime.Close()
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the connection did not end after its peer closed")
		}
	})
}
