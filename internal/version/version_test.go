package version

import (
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

const rev = "5c2c1ecabcdef0123456789abcdef0123456789a"

func vcs(revision, at, modified string) []debug.BuildSetting {
	return []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: revision},
		{Key: "vcs.time", Value: at},
		{Key: "vcs.modified", Value: modified},
	}
}

// TestFromBuildInfo: what each kind of build reports, with the build
// information Go records for it.
func TestFromBuildInfo(t *testing.T) {
	at := time.Date(2026, 11, 25, 21, 51, 0, 0, time.UTC)
	for _, c := range []struct {
		name     string
		bi       *debug.BuildInfo
		st       Stamp
		want     string // Info.String
		commit   string
		modified bool
	}{
		{"no build information", nil, Stamp{}, "devel", "", false},
		{"checkout without VCS information (worktree, -buildvcs=false)",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: Module, Version: "(devel)"}},
			Stamp{}, "devel", "", false},
		{"checkout with VCS information, clean",
			&debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}, Settings: vcs(rev, at.Format(time.RFC3339), "false")},
			Stamp{}, "devel+5c2c1ecabcde", rev, false},
		{"checkout with VCS information, modified",
			&debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}, Settings: vcs(rev, at.Format(time.RFC3339), "true")},
			Stamp{}, "devel+5c2c1ecabcde.dirty", rev, true},
		{"go 1.24+ pseudo-version from the checkout, modified",
			&debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v0.0.0-20261125215100-5c2c1ecabcde+dirty"}, Settings: vcs(rev, at.Format(time.RFC3339), "true")},
			Stamp{}, "v0.0.0-20261125215100-5c2c1ecabcde+dirty", rev, true},
		{"go install ...@v0.3.0",
			&debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v0.3.0"}},
			Stamp{}, "v0.3.0", "", false},
		{"tagged checkout, modified",
			&debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v0.3.0"}, Settings: vcs(rev, at.Format(time.RFC3339), "true")},
			Stamp{}, "v0.3.0+dirty", rev, true},
		{"a plugin using the SDK v0.3.0: the plugin's commit is not nri-grpc's",
			&debug.BuildInfo{Main: debug.Module{Path: "example.com/plugin", Version: "(devel)"},
				Deps:     []*debug.Module{{Path: "google.golang.org/grpc", Version: "v1.80.0"}, {Path: Module, Version: "v0.3.0"}},
				Settings: vcs(rev, at.Format(time.RFC3339), "true")},
			Stamp{}, "v0.3.0", "", false},
		{"a plugin using the SDK from a directory (replace)",
			&debug.BuildInfo{Main: debug.Module{Path: "example.com/plugin"},
				Deps: []*debug.Module{{Path: Module, Version: "v0.3.0", Replace: &debug.Module{Path: "../nri-grpc", Version: ""}}}},
			Stamp{}, "devel", "", false},
		{"release build stamped with -ldflags -X",
			&debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}},
			Stamp{Version: "v0.4.0", Commit: rev, Modified: "false"}, "v0.4.0", rev, false},
		{"stamp replaces the recorded commit and its dirt",
			&debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}, Settings: vcs("ffffffffffffffffffffffffffffffffffffffff", at.Format(time.RFC3339), "true")},
			Stamp{Commit: rev}, "devel+5c2c1ecabcde", rev, false},
		{"stamped dirty",
			&debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}},
			Stamp{Commit: rev, Modified: "true"}, "devel+5c2c1ecabcde.dirty", rev, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			info := FromBuildInfo(c.bi, c.st)
			if got := info.String(); got != c.want {
				t.Errorf("String() = %q, want %q", got, c.want)
			}
			if info.Commit != c.commit || info.Modified != c.modified {
				t.Errorf("commit %q modified %v, want %q %v", info.Commit, info.Modified, c.commit, c.modified)
			}
			if info.Go == "" {
				t.Error("no Go version")
			}
		})
	}
}

// TestWrite: what --version prints, with and without a commit.
func TestWrite(t *testing.T) {
	info := FromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: Module, Version: "(devel)"},
		Settings: vcs(rev, "2026-11-25T21:51:00Z", "true")}, Stamp{})
	var b strings.Builder
	if err := info.Write(&b, "nrid"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"nrid devel+5c2c1ecabcde.dirty\n",
		"  commit    5c2c1ecabcde (2026-11-25T21:51:00Z)\n",
		"  modified  true\n",
		"  go        go1.26.8 ",
		"  protocol  v1beta1\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := FromBuildInfo(nil, Stamp{}).Write(&b, "nrictl"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "nrictl devel\n  commit    unknown") || !strings.Contains(b.String(), "modified  unknown") {
		t.Errorf("without VCS information:\n%s", b.String())
	}
	f := info.Fields()
	if f["version"] != "devel+5c2c1ecabcde.dirty" || f["commit"] != rev || f["modified"] != true || f["commit_time"] != "2026-11-25T21:51:00Z" || f["protocol"] != Protocol {
		t.Errorf("Fields() = %v", f)
	}
}

// TestNRI: the nri_version value names the protocol and the server.
func TestNRI(t *testing.T) {
	if got := NRI(); !strings.HasPrefix(got, "v1beta1 nri-grpc/") || strings.Contains(got, "(devel)") {
		t.Errorf("NRI() = %q", got)
	}
}
