package adaptation

import (
	"context"
	"log/slog"
	"strconv"
	"strings"

	nrilog "github.com/containerd/nri/pkg/log"
)

// upstreamLogHandler is a slog.Handler that writes through upstream's
// pkg/log, which runtimes point at their own log (containerd: its logrus
// logger), so the server's records appear among the runtime's own. The
// record's attributes follow the message as key=value.
type upstreamLogHandler struct {
	attrs string // preformatted attributes of WithAttrs
	group string // prefix of WithGroup
}

func newUpstreamLogHandler() *upstreamLogHandler { return &upstreamLogHandler{} }

// Enabled implements slog.Handler: upstream's logger filters by level.
func (h *upstreamLogHandler) Enabled(context.Context, slog.Level) bool { return true }

// Handle implements slog.Handler.
func (h *upstreamLogHandler) Handle(ctx context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString("nri-grpc: ")
	b.WriteString(rec.Message)
	b.WriteString(h.attrs)
	rec.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, h.group, a)
		return true
	})
	msg := b.String()
	switch {
	case rec.Level >= slog.LevelError:
		nrilog.Errorf(ctx, "%s", msg)
	case rec.Level >= slog.LevelWarn:
		nrilog.Warnf(ctx, "%s", msg)
	case rec.Level >= slog.LevelInfo:
		nrilog.Infof(ctx, "%s", msg)
	default:
		nrilog.Debugf(ctx, "%s", msg)
	}
	return nil
}

// writeAttr appends " key=value" (groups flattened with dots).
func writeAttr(b *strings.Builder, group string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	key := a.Key
	if group != "" {
		key = group + "." + key
	}
	if a.Value.Kind() == slog.KindGroup {
		for _, g := range a.Value.Group() {
			writeAttr(b, key, g)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(key)
	b.WriteByte('=')
	v := a.Value.String()
	if strings.ContainsAny(v, " \"=") || v == "" {
		v = strconv.Quote(v)
	}
	b.WriteString(v)
}

// WithAttrs implements slog.Handler.
func (h *upstreamLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range attrs {
		writeAttr(&b, h.group, a)
	}
	return &upstreamLogHandler{attrs: b.String(), group: h.group}
}

// WithGroup implements slog.Handler.
func (h *upstreamLogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	g := name
	if h.group != "" {
		g = h.group + "." + name
	}
	return &upstreamLogHandler{attrs: h.attrs, group: g}
}
