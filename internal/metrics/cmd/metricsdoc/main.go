// Command metricsdoc writes the reference table of nrid's metrics, built
// from the metrics package's real registry (metrics.Reference), into a
// Markdown file between two marker lines:
//
//	<!-- metrics-reference:begin (make metrics-doc) -->
//	<!-- metrics-reference:end -->
//
// Usage:
//
//	metricsdoc -w docs/operations.md       rewrite the table in place (make metrics-doc)
//	metricsdoc -check docs/operations.md   fail if the committed table differs (make check)
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/nri-grpc/nri-grpc/internal/metrics"
)

const (
	beginMarker = "<!-- metrics-reference:begin (make metrics-doc) -->"
	endMarker   = "<!-- metrics-reference:end -->"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "metricsdoc:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("metricsdoc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	write := fs.String("w", "", "rewrite the table in `file`")
	check := fs.String("check", "", "fail if the table in `file` is not the generated one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (*write == "") == (*check == "") || fs.NArg() > 0 {
		return errors.New("usage: metricsdoc -w FILE | -check FILE")
	}
	path := *write + *check
	infos, err := metrics.Reference()
	if err != nil {
		return err
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, err := splice(old, table(infos))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if *check != "" {
		if !bytes.Equal(old, updated) {
			return fmt.Errorf("%s: the metrics reference is stale: run 'make metrics-doc' and commit the result", path)
		}
		return nil
	}
	if bytes.Equal(old, updated) {
		return nil
	}
	return os.WriteFile(path, updated, 0o644)
}

// splice replaces what lies between the marker lines of doc with body.
func splice(doc []byte, body string) ([]byte, error) {
	s := string(doc)
	b := strings.Index(s, beginMarker+"\n")
	e := strings.Index(s, endMarker)
	if b < 0 || e < 0 || e < b {
		return nil, fmt.Errorf("no %q ... %q lines", beginMarker, endMarker)
	}
	start := b + len(beginMarker) + 1
	return []byte(s[:start] + body + s[e:]), nil
}

// table renders the nri_ families as a Markdown table, then names the
// client_golang families beside them.
func table(infos []metrics.Info) string {
	var sb strings.Builder
	sb.WriteString("| Metric | Type | Labels | Meaning |\n|---|---|---|---|\n")
	var others []string
	for _, i := range infos {
		if !strings.HasPrefix(i.Name, metrics.Namespace+"_") {
			if p, _, ok := strings.Cut(i.Name, "_"); ok && !slices.Contains(others, p) {
				others = append(others, p)
			}
			continue
		}
		labels := make([]string, len(i.Labels))
		for k, l := range i.Labels {
			labels[k] = "`" + l + "`"
		}
		fmt.Fprintf(&sb, "| `%s` | %s | %s | %s |\n", i.Name, i.Type, strings.Join(labels, ", "), escape(i.Help))
	}
	if len(others) > 0 {
		for k, p := range others {
			others[k] = "`" + p + "_*`"
		}
		fmt.Fprintf(&sb, "\nBeside them, client_golang's %s families (the Go runtime, the process, the /metrics handler).\n",
			strings.Join(others, ", "))
	}
	return sb.String()
}

// escape keeps help text inside its table cell.
func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
