package config

import (
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// keyIndex maps the TOML paths of a document ("server.socket",
// "policy[1].events[0]") to where they are, so that errors found after
// decoding can name the line.
type keyIndex struct {
	entries map[string]keyEntry
	order   []string // paths in document order
}

type keyEntry struct {
	line, col int
	kind      unstable.Kind // the value's kind; Table/ArrayTable for headers
}

// indexKeys walks a document. A document that does not parse gives what
// was indexed before the error.
func indexKeys(data []byte) *keyIndex {
	idx := &keyIndex{entries: map[string]keyEntry{}}
	var p unstable.Parser
	p.Reset(data)
	arrays := map[string]int{} // resolved array-of-tables path -> elements
	prefix := ""
	// resolve maps the key parts of a header to a path, descending into the
	// last element of arrays of tables.
	resolve := func(parts []string) string {
		path := ""
		for _, part := range parts {
			if path != "" {
				path += "."
			}
			path += part
			if n := arrays[path]; n > 0 {
				path = fmt.Sprintf("%s[%d]", path, n-1)
			}
		}
		return path
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts, first := keyParts(e)
			if first == nil {
				continue
			}
			pos := p.Shape(first.Raw).Start
			if e.Kind == unstable.Table {
				prefix = resolve(parts)
			} else {
				parent := resolve(parts[:len(parts)-1])
				arr := parts[len(parts)-1]
				if parent != "" {
					arr = parent + "." + arr
				}
				arrays[arr]++
				prefix = fmt.Sprintf("%s[%d]", arr, arrays[arr]-1)
				idx.add(arr, pos, e.Kind)
			}
			idx.add(prefix, pos, e.Kind)
		case unstable.KeyValue:
			idx.keyValue(&p, prefix, e)
		}
	}
	return idx
}

func keyParts(e *unstable.Node) ([]string, *unstable.Node) {
	var parts []string
	var first *unstable.Node
	it := e.Key()
	for it.Next() {
		if first == nil {
			first = it.Node()
		}
		parts = append(parts, string(it.Node().Data))
	}
	return parts, first
}

func (idx *keyIndex) add(path string, pos unstable.Position, kind unstable.Kind) {
	if _, ok := idx.entries[path]; !ok {
		idx.order = append(idx.order, path)
	}
	idx.entries[path] = keyEntry{line: pos.Line, col: pos.Column, kind: kind}
}

// keyValue indexes a key-value (and the contents of inline tables and
// arrays) under prefix.
func (idx *keyIndex) keyValue(p *unstable.Parser, prefix string, e *unstable.Node) {
	parts, first := keyParts(e)
	if first == nil {
		return
	}
	pos := p.Shape(first.Raw).Start
	path := prefix
	for _, part := range parts {
		if path != "" {
			path += "."
		}
		path += part
		idx.add(path, pos, e.Value().Kind)
	}
	idx.value(p, path, e.Value(), pos)
}

func (idx *keyIndex) value(p *unstable.Parser, path string, v *unstable.Node, pos unstable.Position) {
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			idx.keyValue(p, path, it.Node())
		}
	case unstable.Array:
		it := v.Children()
		for i := 0; it.Next(); i++ {
			el := fmt.Sprintf("%s[%d]", path, i)
			at := pos
			if r := it.Node().Raw; r.Length > 0 {
				at = p.Shape(r).Start
			}
			idx.add(el, at, it.Node().Kind)
			idx.value(p, el, it.Node(), at)
		}
	}
}

// lineOf returns the line of path, or of its closest indexed ancestor
// ("policy[1].events[3]" -> "policy[1].events" -> "policy[1]"), or 0.
func (idx *keyIndex) lineOf(path string) int {
	for path != "" {
		if e, ok := idx.entries[path]; ok {
			return e.line
		}
		cut := max(strings.LastIndexByte(path, '.'), strings.LastIndexByte(path, '['))
		if cut <= 0 {
			break
		}
		path = path[:cut]
	}
	return 0
}

// keyAt returns the indexed path at line and column whose dotted form
// without array indices is plain ("plugin.nmae" for "plugin[1].nmae"), or
// plain itself.
func (idx *keyIndex) keyAt(line, col int, plain string) string {
	for _, path := range idx.order {
		e := idx.entries[path]
		if e.line == line && e.col == col && stripIndices(path) == plain {
			return path
		}
	}
	for _, path := range idx.order {
		if e := idx.entries[path]; e.line == line && stripIndices(path) == plain {
			return path
		}
	}
	return plain
}

func stripIndices(path string) string {
	var b strings.Builder
	depth := 0
	for _, r := range path {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}
