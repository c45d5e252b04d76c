package wasm

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/tetratelabs/wazero/api"

	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

const (
	// maxLogLine bounds one logged line of a module (log call, stdout or
	// stderr line); longer ones are cut and say so.
	maxLogLine = 4 << 10
	// maxLogRead bounds a log call's request read from the module.
	maxLogRead = 4 << 20
	// logBurst and logRate bound how many lines per second a module may
	// log: a burst of logBurst, then logRate per second; the lines over
	// are counted and reported with the next line let through.
	logBurst = 200
	logRate  = 50
)

// hostLog is the host function "env"."log": it logs the module's
// LogRequest at its level. Unlike upstream's host it never traps the
// module: a request it cannot read or decode is logged as such.
func (p *Plugin) hostLog(ctx context.Context, m api.Module, stack []uint64) {
	offset, size := uint32(stack[0]), uint32(stack[1])
	stack[0] = 0 // an empty answer (api.Empty), as upstream's host returns
	if size > maxLogRead {
		p.logLine(ctx, slog.LevelWarn, "log call over the size limit", "bytes", size)
		return
	}
	b, ok := m.Memory().Read(offset, size)
	if !ok {
		p.logLine(ctx, slog.LevelWarn, "log call outside the module's memory", "bytes", size)
		return
	}
	req := &v1alpha1.LogRequest{}
	if err := req.UnmarshalVT(b); err != nil {
		p.logLine(ctx, slog.LevelWarn, "undecodable log call", "error", err)
		return
	}
	level := slog.LevelDebug
	switch req.GetLevel() {
	case v1alpha1.LogRequest_LEVEL_INFO:
		level = slog.LevelInfo
	case v1alpha1.LogRequest_LEVEL_WARN:
		level = slog.LevelWarn
	case v1alpha1.LogRequest_LEVEL_ERROR:
		level = slog.LevelError
	}
	p.logLine(ctx, level, clipLine(req.GetMsg()))
}

// logLine logs msg unless the module is over its line rate.
func (p *Plugin) logLine(ctx context.Context, level slog.Level, msg string, args ...any) {
	ok, dropped := p.logs.allow()
	if !ok {
		return
	}
	if dropped > 0 {
		args = append(args, "dropped_lines", dropped)
	}
	p.log.Log(ctx, level, msg, args...)
}

// clipLine makes s a bounded, valid UTF-8 log line.
func clipLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxLogLine {
		return untrusted.Cut(s, maxLogLine) + "... (cut)"
	}
	return s
}

// lineWriter returns the module's stream (stdout or stderr) as log lines
// at level.
func (p *Plugin) lineWriter(stream string, level slog.Level) io.Writer {
	return &lineWriter{p: p, stream: stream, level: level}
}

// lineWriter logs each line written to it; a line longer than maxLogLine
// is logged in pieces.
type lineWriter struct {
	p      *Plugin
	stream string
	level  slog.Level
	mu     sync.Mutex
	buf    []byte
}

// Write implements io.Writer.
func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			room := maxLogLine - len(w.buf)
			if len(b) < room {
				w.buf = append(w.buf, b...)
				break
			}
			w.buf = append(w.buf, b[:room]...)
			b = b[room:]
			w.flush()
			continue
		}
		w.buf = append(w.buf, b[:i]...)
		b = b[i+1:]
		w.flush()
	}
	return n, nil
}

// flush logs the buffered line.
func (w *lineWriter) flush() {
	if len(bytes.TrimSpace(w.buf)) == 0 {
		w.buf = w.buf[:0]
		return
	}
	w.p.logLine(context.Background(), w.level, clipLine(string(w.buf)), "stream", w.stream)
	w.buf = w.buf[:0]
}

// logLimiter is a token bucket of log lines.
type logLimiter struct {
	now     func() time.Time
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int
}

// newLogLimiter returns a full bucket.
func newLogLimiter(now func() time.Time) *logLimiter {
	return &logLimiter{now: now, tokens: logBurst, last: now()}
}

// allow takes a token: ok says whether the line may be logged, dropped how
// many lines were refused since the last one allowed.
func (l *logLimiter) allow() (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.now()
	l.tokens = min(logBurst, l.tokens+t.Sub(l.last).Seconds()*logRate)
	l.last = t
	if l.tokens < 1 {
		l.dropped++
		return false, 0
	}
	l.tokens--
	dropped, l.dropped = l.dropped, 0
	return true, dropped
}
