package peercred

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
)

// frame encodes an HTTP/2 frame of type typ on stream with a payload of n
// bytes.
func frame(typ byte, stream uint32, n int) []byte {
	b := make([]byte, 9+n)
	b[0], b[1], b[2] = byte(n>>16), byte(n>>8), byte(n)
	b[3] = typ
	binary.BigEndian.PutUint32(b[5:9], stream)
	for i := range n {
		b[9+i] = 0x3 // payload bytes that look like frame types
	}
	return b
}

func concat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// TestConnStateScansFrames: the frame headers are found whatever the reads'
// boundaries, behind the client preface and across payloads.
func TestConnStateScansFrames(t *testing.T) {
	preface := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	open := concat(preface, frame(0x4, 0, 6), frame(frameHeaders, 1, 40), frame(0x0, 1, 70000), frame(frameHeaders, 3, 12))
	later := concat(frame(0x0, 3, 5), frame(frameRSTStream, 5, 4), frame(frameRSTStream, 3, 4), frame(frameGoAway, 0, 8))
	for _, chunk := range []int{1, 2, 7, 9, 100, 1 << 20} {
		w, st := watch(nil)
		feed := func(b []byte) {
			for len(b) > 0 {
				k := min(chunk, len(b))
				w.scan(b[:k])
				b = b[k:]
			}
		}
		feed(open)
		m := st.Mark()
		if reset, goAway, err := st.Since(m); reset || goAway || err != nil {
			t.Fatalf("chunk %d: after opening: %v %v %v", chunk, reset, goAway, err)
		}
		feed(later)
		reset, goAway, _ := st.Since(m)
		if !reset || !goAway {
			t.Fatalf("chunk %d: reset %v goAway %v, want both", chunk, reset, goAway)
		}
		// Stream 5 opened after the mark: its reset is not the caller's.
		w2, st2 := watch(nil)
		w2.scan(open)
		m2 := st2.Mark()
		w2.scan(concat(frame(frameHeaders, 5, 3), frame(frameRSTStream, 5, 4)))
		if reset, _, _ := st2.Since(m2); reset {
			t.Fatalf("chunk %d: a later stream's reset counted", chunk)
		}
	}
}

// TestConnStateReadEnd: how the peer ended the connection is recorded; this
// side closing it is not the peer's doing.
func TestConnStateReadEnd(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	pair := func() (*watchedConn, *ConnState, net.Conn) {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		s, err := lis.Accept()
		if err != nil {
			t.Fatal(err)
		}
		w, st := watch(s)
		return w, st, c
	}

	w, st, c := pair()
	_ = c.Close()
	if _, err := w.Read(make([]byte, 8)); !errors.Is(err, io.EOF) {
		t.Fatalf("read: %v", err)
	}
	if _, _, err := st.Since(Mark{}); !errors.Is(err, io.EOF) {
		t.Fatalf("peer closed: recorded %v", err)
	}

	w, st, c = pair()
	defer c.Close()
	_ = w.Close()
	if _, err := w.Read(make([]byte, 8)); err == nil {
		t.Fatal("read on a closed connection")
	}
	if _, _, err := st.Since(Mark{}); err != nil {
		t.Fatalf("closed here: recorded %v", err)
	}
}

// BenchmarkScan is what the scan adds to reading a unary call of about
// 6 kB (a CreateContainer request): a HEADERS and a DATA frame.
func BenchmarkScan(b *testing.B) {
	call := concat(frame(frameHeaders, 1, 120), frame(0x0, 1, 6000))
	w, _ := watch(nil)
	w.scan([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	b.SetBytes(int64(len(call)))
	for b.Loop() {
		w.scan(call)
	}
}
