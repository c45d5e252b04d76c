package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		file        string
		index, name string
		err         string
	}{
		{file: "10-foo", index: "10", name: "foo"},
		{file: "00-a", index: "00", name: "a"},
		{file: "99-foo-bar_baz.v1+x", index: "99", name: "foo-bar_baz.v1+x"},
		{file: "foo", err: "not of the form NN-name"},
		{file: "1-foo", err: `invalid plugin index "1"`},
		{file: "100-foo", err: `invalid plugin index "100"`},
		{file: "ab-foo", err: `invalid plugin index "ab"`},
		{file: "１２-foo", err: "invalid plugin index"}, // full-width digits are not ASCII
		{file: "10-", err: "name is empty"},
		{file: "10-foo bar", err: `contains invalid character ' '`},
		{file: "10-fö", err: `contains invalid character 'ö'`},
	} {
		index, name, err := ParseName(tc.file)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseName(%q) error = %v, want one containing %q", tc.file, err, tc.err)
			}
			continue
		}
		if err != nil || index != tc.index || name != tc.name {
			t.Errorf("ParseName(%q) = %q, %q, %v; want %q, %q, nil", tc.file, index, name, err, tc.index, tc.name)
		}
	}
}

func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	conf := t.TempDir()
	write := func(dir, name string, mode os.FileMode, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // umask-proof
			t.Fatal(err)
		}
	}
	mkdir := func(p string) {
		t.Helper()
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// Plugins.
	write(dir, "20-zeta", 0o755, "")
	write(dir, "10-foo", 0o700, "")
	write(dir, "10-bar", 0o755, "")
	write(dir, "05-only-x", 0o710, "") // group executable only
	if err := os.Symlink("20-zeta", filepath.Join(dir, "40-link")); err != nil {
		t.Fatal(err) // a link to an executable is a plugin
	}
	// Skipped silently.
	write(dir, "README", 0o644, "")
	write(dir, "50-noexec", 0o644, "")
	mkdir(filepath.Join(dir, "60-dir"))
	if err := os.Symlink("60-dir", filepath.Join(dir, "61-dirlink")); err != nil {
		t.Fatal(err)
	}
	// Reported and skipped.
	write(dir, "1-short", 0o755, "")
	write(dir, "ab-letters", 0o755, "")
	write(dir, "nodash", 0o755, "")
	write(dir, "70-", 0o755, "")
	write(dir, "70-bad name", 0o755, "")
	write(dir, "80-badconf", 0o755, "")
	if err := os.Symlink("does-not-exist", filepath.Join(dir, "90-dangling")); err != nil {
		t.Fatal(err)
	}

	// Configurations.
	write(conf, "10-foo.conf", 0o644, "indexed foo")
	write(conf, "foo.conf", 0o644, "plain foo") // shadowed by 10-foo.conf
	write(conf, "bar.conf", 0o644, "plain bar") // fallback for 10-bar
	write(conf, "zeta.conf", 0o644, "")         // empty, but present
	mkdir(filepath.Join(conf, "80-badconf.conf"))

	plugins, errs := Discover(dir, conf)

	type want struct {
		index, name, config string
		hasConfig           bool
	}
	wants := []want{
		{"05", "only-x", "", false},
		{"10", "bar", "plain bar", true},
		{"10", "foo", "indexed foo", true},
		{"20", "zeta", "", true},
		{"40", "link", "", false},
	}
	if len(plugins) != len(wants) {
		t.Fatalf("Discover found %d plugins, want %d: %+v", len(plugins), len(wants), plugins)
	}
	for i, w := range wants {
		p := plugins[i]
		if p.Index != w.index || p.Name != w.name {
			t.Errorf("plugin %d = %s, want %s-%s", i, p.FullName(), w.index, w.name)
		}
		if want := filepath.Join(dir, w.index+"-"+w.name); p.Path != want {
			t.Errorf("%s: Path = %q, want %q", p.FullName(), p.Path, want)
		}
		if string(p.Config) != w.config || (p.Config != nil) != w.hasConfig {
			t.Errorf("%s: Config = %q (nil: %v), want %q (nil: %v)", p.FullName(), p.Config, p.Config == nil, w.config, !w.hasConfig)
		}
	}

	wantErrs := map[string]string{
		"1-short":     `invalid plugin index "1"`,
		"ab-letters":  `invalid plugin index "ab"`,
		"nodash":      "not of the form NN-name",
		"70-":         "name is empty",
		"70-bad name": "invalid character",
		"80-badconf":  "80-badconf.conf",
		"90-dangling": "no such file",
	}
	if len(errs) != len(wantErrs) {
		t.Errorf("Discover reported %d errors, want %d: %v", len(errs), len(wantErrs), errs)
	}
	for _, err := range errs {
		var de *DiscoveryError
		if !errors.As(err, &de) {
			t.Errorf("error %v is not a *DiscoveryError", err)
			continue
		}
		file := filepath.Base(de.Path)
		want, ok := wantErrs[file]
		if !ok {
			t.Errorf("unexpected error for %s: %v", file, err)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), de.Path) {
			t.Errorf("error for %s = %q, want it to name the file and contain %q", file, err, want)
		}
	}
}

func TestDiscoverMissingDir(t *testing.T) {
	plugins, errs := Discover(filepath.Join(t.TempDir(), "missing"), "")
	if plugins != nil || errs != nil {
		t.Errorf("Discover(missing dir) = %v, %v; want nothing", plugins, errs)
	}
}

func TestDiscoverNoConfDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "10-foo"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	// A missing configuration directory is like an empty one.
	for _, conf := range []string{"", filepath.Join(dir, "missing")} {
		plugins, errs := Discover(dir, conf)
		if len(errs) != 0 || len(plugins) != 1 || plugins[0].Config != nil {
			t.Errorf("Discover(dir, %q) = %+v, %v; want 10-foo without config", conf, plugins, errs)
		}
	}
}

func TestDiscoverUnreadableDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	plugins, errs := Discover(file, "")
	if plugins != nil || len(errs) != 1 {
		t.Errorf("Discover(a file) = %v, %v; want one error", plugins, errs)
	}
}

// TestSurveyReportsEverySkippedFile: Survey finds what Discover finds and
// names every other entry with the reason it is skipped, the ones Discover
// skips silently included; a missing directory is reported too.
func TestSurveyReportsEverySkippedFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("10-good", 0o755)
	write("20-noexec", 0o644)
	write("README", 0o644)
	write("bad-name", 0o755)
	if err := os.Mkdir(filepath.Join(dir, "30-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "40-gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "README"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}

	found, silent := Discover(dir, "")
	plugins, errs := Survey(dir, "")
	if len(plugins) != 1 || plugins[0].FullName() != "10-good" || len(found) != 1 {
		t.Fatalf("Survey found %v, Discover %v; want 10-good only", plugins, found)
	}
	want := map[string]string{
		"20-noexec": "not executable (mode 0644)",
		"README":    "not executable (mode 0644)",
		"link":      "not executable (mode 0644)",
		"bad-name":  `invalid plugin index "bad"`,
		"30-dir":    "a directory",
		"40-gone":   "no such file or directory",
	}
	got := map[string]string{}
	for _, err := range errs {
		var de *DiscoveryError
		if !errors.As(err, &de) {
			t.Fatalf("%v is not a *DiscoveryError", err)
		}
		got[filepath.Base(de.Path)] = err.Error()
	}
	for file, reason := range want {
		if !strings.Contains(got[file], reason) {
			t.Errorf("%s: got %q, want the reason %q", file, got[file], reason)
		}
	}
	if len(got) != len(want) {
		t.Errorf("Survey reported %d files, want %d: %v", len(got), len(want), got)
	}
	// Discover reports only the executables with bad names and the dangling
	// plugin link, as before.
	if len(silent) != 2 {
		t.Errorf("Discover reported %v, want bad-name and 40-gone", silent)
	}

	_, errs = Survey(filepath.Join(dir, "missing"), "")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "does not exist") {
		t.Errorf("missing dir: %v", errs)
	}
}
