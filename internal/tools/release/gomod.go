package main

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Listed is what `go version -m` prints of one binary: its Go version and
// the modules it was linked with.
type Listed struct {
	// GoVersion is the toolchain ("go1.26.8").
	GoVersion string
	// Modules are its dep lines, each replaced by its "=>" line when it has
	// one (Module.Replaces is not filled in).
	Modules []Module
}

// ParseGoVersionM parses the output of `go version -m FILE...`: per binary
// (by file name), its Go version and modules. It reads Go's text, not the
// build information itself, so that the SBOM is checked against another
// reader of the binaries than the one that wrote it.
func ParseGoVersionM(r io.Reader) (map[string]Listed, error) {
	out := map[string]Listed{}
	var (
		name string
		cur  Listed
	)
	flush := func() {
		if name != "" {
			out[name] = cur
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "\t") {
			// "PATH: go1.26.8"
			i := strings.LastIndex(line, ": ")
			if i < 0 {
				return nil, fmt.Errorf("line %d: %q is neither a binary nor a field", n, line)
			}
			flush()
			name, cur = filepath.Base(line[:i]), Listed{GoVersion: line[i+2:]}
			continue
		}
		if name == "" {
			return nil, fmt.Errorf("line %d: a field before the first binary", n)
		}
		f := strings.Split(line[1:], "\t")
		switch f[0] {
		case "dep", "=>":
			if len(f) < 3 {
				return nil, fmt.Errorf("line %d: %q: want path and version", n, line)
			}
			m := Module{Path: f[1], Version: f[2]}
			if len(f) > 3 {
				m.Sum = f[3]
			}
			if f[0] == "dep" {
				cur.Modules = append(cur.Modules, m)
			} else if len(cur.Modules) == 0 {
				return nil, fmt.Errorf("line %d: a replacement of nothing", n)
			} else {
				cur.Modules[len(cur.Modules)-1] = m
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	flush()
	if len(out) == 0 {
		return nil, fmt.Errorf("no binary in the output")
	}
	return out, nil
}
