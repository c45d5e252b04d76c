package classicwire_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/nri-grpc/nri-grpc/internal/classicwire"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
)

// message builds a ttrpc message: its header and payload, without a
// multiplexer frame.
func message(sid uint32, typ, flags byte, payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	b = binary.BigEndian.AppendUint32(b, sid)
	b = append(b, typ, flags)
	return append(b, payload...)
}

// muxFrame builds a multiplexer frame carrying b, whatever b is.
func muxFrame(conn uint32, b []byte) []byte {
	f := binary.BigEndian.AppendUint32(nil, conn)
	f = binary.BigEndian.AppendUint32(f, uint32(len(b)))
	return append(f, b...)
}

// requestFor is a ttrpc request for the plugin service's method with
// payload, encoded like validRequest.
func requestFor(method string, payload []byte) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, "nri.pkg.api.v1alpha1.Plugin")
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, method)
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	return protowire.AppendBytes(b, payload)
}

// responseWith is a ttrpc response carrying payload.
func responseWith(payload []byte) []byte {
	b := protowire.AppendTag(nil, 2, protowire.BytesType)
	return protowire.AppendBytes(b, payload)
}

// split cuts stream into frames on conn, each of size(), at most what is
// left.
func split(conn uint32, stream []byte, size func() int) [][]byte {
	var frames [][]byte
	for len(stream) > 0 {
		n := min(size(), len(stream))
		frames = append(frames, muxFrame(conn, stream[:n]))
		stream = stream[n:]
	}
	return frames
}

// drain reads the frames the connection writes until the pipe closes and
// sends each one's conn id, stream id and type on out.
func drain(r io.Reader, out chan<- [3]uint32) {
	defer close(out)
	hdr := make([]byte, 18)
	for {
		if _, err := io.ReadFull(r, hdr); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[4:8])
		if _, err := io.CopyN(io.Discard, r, int64(n)-10); err != nil {
			return
		}
		out <- [3]uint32{binary.BigEndian.Uint32(hdr[0:4]), binary.BigEndian.Uint32(hdr[12:16]), uint32(hdr[16])}
	}
}

// received is what the handler got for one call.
type received struct {
	method  string
	payload []byte
}

// TestReassemblyRandomFrames: messages cut into frames of random sizes
// (1 to 64 bytes, so that several messages share a frame and headers are
// split between frames), with the frames of the other connection and of an
// unknown one interleaved, all reach their destination intact and in
// order; payloads the handler keeps are never overwritten afterwards.
func TestReassemblyRandomFrames(t *testing.T) {
	var shared, splitHeaders int
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s, h := reassembleRandom(t, seed)
			shared += s
			splitHeaders += h
		})
	}
	if shared == 0 || splitHeaders == 0 {
		t.Fatalf("the random cuts had %d frames with several messages and %d split headers: both cases must occur", shared, splitHeaders)
	}
	t.Logf("%d frames held several messages, %d headers were split", shared, splitHeaders)
}

// reassembleRandom runs one random case and returns how many frames held
// the ends of several messages and how many headers were split.
func reassembleRandom(t *testing.T, seed uint64) (shared, splitHeaders int) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	runtimeEnd, plugin := net.Pipe()
	var (
		mu  sync.Mutex
		got []received
	)
	c := classicwire.New(plugin, func(_ context.Context, method string, payload []byte) ([]byte, error) {
		mu.Lock()
		got = append(got, received{method, payload}) // kept, not copied
		mu.Unlock()
		return []byte{0x08, 0x01}, nil
	})
	defer c.Close()
	answers := make(chan [3]uint32, 256)
	go drain(runtimeEnd, answers)
	defer runtimeEnd.Close()

	// A call of the plugin to the runtime, answered below on RuntimeConn.
	callDone := make(chan error, 1)
	rsp := &v1alpha1.UpdateContainersResponse{}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
		defer cancel()
		callDone <- c.Call(ctx, "UpdateContainers", &v1alpha1.UpdateContainersRequest{}, rsp)
	}()
	var callSID uint32
	select {
	case a := <-answers:
		if a[0] != classicwire.RuntimeConn || a[2] != 1 {
			t.Fatalf("first frame written: conn %d, type %d; want the call's request", a[0], a[2])
		}
		callSID = a[1]
	case <-time.After(testwait.Bound()):
		t.Fatal("the call's request was not written")
	}

	// The runtime's requests: sizes from empty to a few kB, back to back.
	type want struct {
		method  string
		payload []byte
	}
	var (
		wants  []want
		stream []byte
		starts []int // where each message starts in stream
	)
	for i := range 40 {
		var n int
		switch rng.IntN(4) {
		case 0:
			n = 0
		case 1, 2:
			n = rng.IntN(24)
		default:
			n = rng.IntN(5000)
		}
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		w := want{fmt.Sprint("Method", i), p}
		wants = append(wants, w)
		starts = append(starts, len(stream))
		stream = append(stream, message(uint32(2*i+1), 1, 0, requestFor(w.method, w.payload))...)
	}
	size := func() int { return 1 + rng.IntN(64) }
	pluginFrames := split(classicwire.PluginConn, stream, size)

	// Count the cases the cut produced: frames holding the end of a
	// message and the start of the next, and frames ending inside a header.
	pos := 0
	for _, f := range pluginFrames {
		end := pos + len(f) - 8
		for _, s := range starts {
			if pos < s && s < end {
				shared++
				break
			}
		}
		for _, s := range starts {
			if s < end && end < s+10 {
				splitHeaders++
			}
		}
		pos = end
	}

	// The runtime connection's stream: a response to no call, an empty
	// message and a request (all ignored), then the answer to the call.
	failed := &v1alpha1.UpdateContainersResponse{}
	for i := range 50 {
		failed.Failed = append(failed.Failed, &v1alpha1.ContainerUpdate{ContainerId: fmt.Sprint("container-", i)})
	}
	fb, err := failed.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	var rstream []byte
	rstream = append(rstream, message(callSID+100, 2, 0, responseWith([]byte{0x08, 0x01}))...)
	rstream = append(rstream, message(callSID+200, 2, 0, nil)...)
	rstream = append(rstream, message(7, 1, 0, requestFor("Ignored", nil))...)
	rstream = append(rstream, message(callSID, 2, 0, responseWith(fb))...)
	runtimeFrames := split(classicwire.RuntimeConn, rstream, size)

	// Interleave, with frames of an unknown conn in between.
	var wire []byte
	for len(pluginFrames)+len(runtimeFrames) > 0 {
		switch r := rng.IntN(10); {
		case r == 0:
			junk := make([]byte, rng.IntN(40))
			for j := range junk {
				junk[j] = byte(rng.Uint32())
			}
			wire = append(wire, muxFrame(7, junk)...)
		case r < 3 && len(runtimeFrames) > 0 || len(pluginFrames) == 0:
			wire, runtimeFrames = append(wire, runtimeFrames[0]...), runtimeFrames[1:]
		default:
			wire, pluginFrames = append(wire, pluginFrames[0]...), pluginFrames[1:]
		}
	}
	go func() { _, _ = runtimeEnd.Write(wire) }()

	// Every request is answered, in order, on its stream.
	deadline := time.After(testwait.Bound())
	for i := range wants {
		select {
		case a, ok := <-answers:
			if !ok {
				t.Fatalf("connection ended after %d answers: %v", i, c.Err())
			}
			if a != [3]uint32{classicwire.PluginConn, uint32(2*i + 1), 2} {
				t.Fatalf("answer %d: conn %d, stream %d, type %d", i, a[0], a[1], a[2])
			}
		case <-deadline:
			t.Fatalf("%d of %d requests answered", i, len(wants))
		}
	}
	select {
	case err := <-callDone:
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(rsp, failed) {
			t.Fatalf("the call's answer has %d failed updates, want %d", len(rsp.GetFailed()), len(failed.GetFailed()))
		}
	case <-deadline:
		t.Fatal("the call was not answered")
	}

	// The payloads the handler kept are still intact now that the frames
	// after them have been read.
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(wants) {
		t.Fatalf("handler got %d requests, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		if got[i].method != w.method || !bytes.Equal(got[i].payload, w.payload) {
			t.Fatalf("request %d: got %s with %d bytes, want %s with %d bytes (or the bytes differ)",
				i, got[i].method, len(got[i].payload), w.method, len(w.payload))
		}
	}
	return shared, splitHeaders
}

// TestOversizedMessageIsRefused: a message header claiming more than
// ttrpc's maximum ends the connection, even when the header arrives in
// pieces.
func TestOversizedMessageIsRefused(t *testing.T) {
	runtimeEnd, plugin := net.Pipe()
	defer runtimeEnd.Close()
	c := classicwire.New(plugin, func(context.Context, string, []byte) ([]byte, error) { return nil, nil })
	defer c.Close()
	hdr := binary.BigEndian.AppendUint32(nil, classicwire.MaxMessage+1)
	hdr = append(hdr, 0, 0, 0, 1, 1, 0)
	go func() {
		_, _ = runtimeEnd.Write(muxFrame(classicwire.PluginConn, hdr[:3]))
		_, _ = runtimeEnd.Write(muxFrame(classicwire.PluginConn, hdr[3:]))
	}()
	select {
	case <-c.Done():
	case <-time.After(testwait.Bound()):
		t.Fatal("connection still open")
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "message of 4194305 bytes, the maximum is") {
		t.Fatalf("connection ended with %v, want the message size refused", err)
	}
}

// bigRequest is a 1 MiB payload and the wire bytes that carry it in a
// request on stream 1, cut into frames of frameSize bytes.
func bigRequest(frameSize int) (payload, wire []byte) {
	payload = make([]byte, 1<<20)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	msg := message(1, 1, 0, requestFor("CreateContainer", payload))
	return payload, slices.Concat(split(classicwire.PluginConn, msg, func() int { return frameSize })...)
}

// checker is a handler that compares each payload with want and reports on
// done.
func checker(want []byte, done chan<- error) classicwire.Handler {
	return func(_ context.Context, method string, payload []byte) ([]byte, error) {
		var err error
		if method != "CreateContainer" || !bytes.Equal(payload, want) {
			err = fmt.Errorf("handler got %s with %d bytes, want CreateContainer with the %d bytes sent", method, len(payload), len(want))
		}
		done <- err
		return nil, nil
	}
}

// TestReassemblyIsLinear: a 1 MiB request in 16-byte frames (65,000
// frames) arrives intact, and reassembling it allocates about the message
// once, not a copy of the partial message per frame.
func TestReassemblyIsLinear(t *testing.T) {
	payload, wire := bigRequest(16)
	runtimeEnd, plugin := net.Pipe()
	defer runtimeEnd.Close()
	done := make(chan error, 1)
	c := classicwire.New(plugin, checker(payload, done))
	defer c.Close()
	go func() { _, _ = io.Copy(io.Discard, runtimeEnd) }()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	go func() { _, _ = runtimeEnd.Write(wire) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-c.Done():
		t.Fatalf("connection ended: %v", c.Err())
	case <-time.After(testwait.Bound()):
		t.Fatal("the request did not reach the handler")
	}
	runtime.ReadMemStats(&after)
	// The message itself, plus a margin for the call's own small
	// allocations and the runtime's; the per-frame copies of a quadratic
	// reassembly add up to tens of GiB.
	alloc := after.TotalAlloc - before.TotalAlloc
	if limit := uint64(2 * len(payload)); alloc > limit {
		t.Fatalf("reassembling a %d-byte message from %d frames allocated %d bytes, want at most %d",
			len(payload), len(wire)/24, alloc, limit)
	}
	t.Logf("reassembling %d bytes from %d frames allocated %d bytes", len(payload), len(wire)/24, alloc)
}

// BenchmarkReassemble16ByteFrames: a 1 MiB request in 16-byte frames, from
// the first frame written to the handler's call.
func BenchmarkReassemble16ByteFrames(b *testing.B) {
	benchmarkReassemble(b, 16)
}

// BenchmarkReassemble4KiBFrames: the same request in the 4 kB frames the
// upstream ttrpc client writes (its write buffer's size).
func BenchmarkReassemble4KiBFrames(b *testing.B) {
	benchmarkReassemble(b, 4096)
}

func benchmarkReassemble(b *testing.B, frameSize int) {
	payload, wire := bigRequest(frameSize)
	runtimeEnd, plugin := net.Pipe()
	defer runtimeEnd.Close()
	done := make(chan error, 1)
	c := classicwire.New(plugin, checker(payload, done))
	defer c.Close()
	go func() { _, _ = io.Copy(io.Discard, runtimeEnd) }()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		go func() { _, _ = runtimeEnd.Write(wire) }()
		select {
		case err := <-done:
			if err != nil {
				b.Fatal(err)
			}
		case <-c.Done():
			b.Fatalf("connection ended: %v", c.Err())
		}
	}
}
