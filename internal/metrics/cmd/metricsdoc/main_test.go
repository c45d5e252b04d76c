package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteThenCheck: -w fills the table between the markers, -check
// accepts the result and refuses a stale table or a file without markers.
func TestWriteThenCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ops.md")
	doc := "# Ops\n\nbefore\n\n" + beginMarker + "\nold table\n" + endMarker + "\n\nafter\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-check", path}, io.Discard); err == nil || !strings.Contains(err.Error(), "make metrics-doc") {
		t.Fatalf("-check on a stale table = %v, want an error naming make metrics-doc", err)
	}
	if err := run([]string{"-w", path}, io.Discard); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, want := range []string{
		"before\n\n" + beginMarker + "\n| Metric | Type | Labels | Meaning |\n",
		"| `nri_plugin_calls_total` | counter | `event`, `outcome`, `plugin` | Calls to plugins",
		"| `nri_plugin_evictions_total` | counter | `plugin`, `reason` |",
		"`go_*`, `process_*`, `promhttp_*`",
		endMarker + "\n\nafter\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("written file lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "old table") {
		t.Error("the old table is still there")
	}
	if err := run([]string{"-check", path}, io.Discard); err != nil {
		t.Fatalf("-check after -w: %v", err)
	}
	if err := os.WriteFile(path, []byte("# no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-w", path}, io.Discard); err == nil {
		t.Fatal("-w on a file without markers: no error")
	}
}

// TestCommittedDocIsCurrent: docs/operations.md holds the generated table
// (what make check verifies, here in go test too).
func TestCommittedDocIsCurrent(t *testing.T) {
	if err := run([]string{"-check", "../../../../docs/operations.md"}, io.Discard); err != nil {
		t.Fatal(err)
	}
}
