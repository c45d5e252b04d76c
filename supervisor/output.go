package supervisor

import (
	"bufio"
	"bytes"
	"errors"
	"log/slog"
	"os"
)

// maxLine is the longest output line logged as one record; longer lines are
// logged in pieces of this size.
const maxLine = 64 << 10

// pump logs the lines a process writes to one of its output streams, at
// info level, with the line as the message and the stream and PID as
// attributes (the plugin's full name is on p.log). Empty lines are dropped.
func (p *Proc) pump(inc *incarnation, r *os.File, stream string) {
	defer inc.pumps.Done()
	defer func() { _ = r.Close() }()

	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		if line = bytes.TrimRight(line, "\r\n"); len(line) > 0 {
			p.log.LogAttrs(p.ctx, slog.LevelInfo, string(line),
				slog.String("stream", stream), slog.Int("pid", inc.pid))
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}
