// Package version reports what build of nri-grpc is running: its version,
// the commit it was built from, whether that tree had uncommitted changes,
// and the Go toolchain.
//
// The information comes from the build itself (runtime/debug.ReadBuildInfo):
// the module version when nri-grpc was built as a module (`go install
// github.com/nri-grpc/nri-grpc/cmd/nrid@v0.3.0`, or as a dependency of a
// plugin), and the vcs.* settings Go records when it builds inside a git
// clone. Release builds may stamp it instead, at link time:
//
//	go build -ldflags "-X github.com/nri-grpc/nri-grpc/internal/version.stampVersion=v0.3.0 \
//	  -X github.com/nri-grpc/nri-grpc/internal/version.stampCommit=$(git rev-parse HEAD) \
//	  -X github.com/nri-grpc/nri-grpc/internal/version.stampModified=false" ./cmd/nrid
//
// A stamp overrides what the build recorded, field by field. `make build`
// stamps the version (git describe), the commit and the dirty flag of the
// checkout, which matters where Go records nothing: git worktrees (Go finds no
// .git directory there), -buildvcs=false, builds from a source tree without
// .git.
package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Protocol is the NRI protocol version nri-grpc speaks.
const Protocol = "v1beta1"

// Module is the Go module path of nri-grpc.
const Module = "github.com/nri-grpc/nri-grpc"

// devel is the version of a build that knows no version of its own.
const devel = "devel"

// Set by the linker (-ldflags -X, see the package documentation) and never
// written at run time: the only way to stamp a binary after the fact.
var (
	stampVersion  string
	stampCommit   string
	stampModified string // "true" or "false"
)

// Stamp is what a release build set at link time; empty fields set nothing.
type Stamp struct {
	// Version is the release version, for example "v0.3.0".
	Version string
	// Commit is the full VCS revision.
	Commit string
	// Modified is "true" when the tree had uncommitted changes, "false"
	// when it had none.
	Modified string
}

// Info describes one build of a module.
type Info struct {
	// Module is the module path.
	Module string
	// Version is the module version ("v0.3.0", a pseudo-version such as
	// "v0.0.0-20261125215100-5c2c1ecabcde"), or "" when the build knows none.
	Version string
	// Commit is the full VCS revision the build was made from, "" when
	// unknown.
	Commit string
	// Time is the commit time, zero when unknown.
	Time time.Time
	// Modified reports uncommitted changes in the tree the build was made
	// from; meaningful only with Commit.
	Modified bool
	// Go is the toolchain that built the binary ("go1.26.8").
	Go string
}

// Get returns nri-grpc's build information: from the running binary's build
// information and the link-time stamp.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return FromBuildInfo(bi, Stamp{Version: stampVersion, Commit: stampCommit, Modified: stampModified})
}

// FromBuildInfo returns nri-grpc's build information as bi (nil when the
// binary has none) and st describe it. The vcs.* settings of bi describe
// the main module, so they count only when nri-grpc is the main module (nrid,
// nrictl, the examples); in a plugin that uses the SDK as a dependency the
// commit is nri-grpc's only when stamped.
func FromBuildInfo(bi *debug.BuildInfo, st Stamp) Info {
	info := Info{Module: Module, Go: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			info.Go = bi.GoVersion
		}
		if bi.Main.Path == Module {
			info = moduleInfo(bi)
		} else {
			info.Version = depVersion(bi)
		}
	}
	if st.Version != "" {
		info.Version = st.Version
	}
	if st.Commit != "" {
		info.Commit = st.Commit
		info.Time = time.Time{}
		info.Modified = false
	}
	if b, err := strconv.ParseBool(st.Modified); err == nil {
		info.Modified = b
	}
	return info
}

// Main returns the build information of the running binary's own main
// module (a plugin's, for the Go SDK's default plugin version).
func Main() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Go: runtime.Version()}
	}
	return moduleInfo(bi)
}

// moduleInfo reads the main module of bi: its version and the vcs.*
// settings.
func moduleInfo(bi *debug.BuildInfo) Info {
	info := Info{Module: bi.Main.Path, Version: known(bi.Main.Version), Go: bi.GoVersion}
	if info.Go == "" {
		info.Go = runtime.Version()
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.time":
			info.Time, _ = time.Parse(time.RFC3339, s.Value)
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// depVersion is nri-grpc's version as a dependency of bi's main module,
// "" when it is not one or has no version (a replace by a directory).
func depVersion(bi *debug.BuildInfo) string {
	for _, d := range bi.Deps {
		if d.Path != Module {
			continue
		}
		if d.Replace != nil {
			return known(d.Replace.Version)
		}
		return known(d.Version)
	}
	return ""
}

// known drops the version Go reports for a build without one.
func known(v string) string {
	if v == "(devel)" {
		return ""
	}
	return v
}

// ShortCommit is the first 12 characters of the commit, "" when unknown.
func (i Info) ShortCommit() string {
	if len(i.Commit) > 12 {
		return i.Commit[:12]
	}
	return i.Commit
}

// String is the version in one word, as nri-grpc reports it in its
// server_version and nri_version fields and in logs: the module version
// ("v0.3.0"), "+dirty" appended when the tree was modified; without a module
// version "devel+" and the short commit ("devel+5c2c1ecabcde",
// "devel+5c2c1ecabcde.dirty"); "devel" when nothing is known.
func (i Info) String() string {
	v := i.Version
	switch {
	case v == "" && i.Commit == "":
		return devel
	case v == "":
		v = devel + "+" + i.ShortCommit()
		if i.Modified {
			v += ".dirty"
		}
		return v
	}
	if i.Modified && i.Commit != "" && !strings.HasSuffix(v, "+dirty") {
		v += "+dirty"
	}
	return v
}

// Write prints the build information for a --version flag, program first:
//
//	nrid v0.3.0
//	  commit    5c2c1ecabcde (2026-11-25T21:51:00Z)
//	  modified  false
//	  go        go1.26.8 linux/amd64
//	  protocol  v1beta1
func (i Info) Write(w io.Writer, program string) error {
	commit, modified := "unknown (no VCS information in this build)", "unknown"
	if i.Commit != "" {
		commit, modified = i.ShortCommit(), strconv.FormatBool(i.Modified)
		if !i.Time.IsZero() {
			commit += " (" + i.Time.UTC().Format(time.RFC3339) + ")"
		}
	}
	_, err := fmt.Fprintf(w, "%s %s\n  commit    %s\n  modified  %s\n  go        %s %s/%s\n  protocol  %s\n",
		program, i, commit, modified, i.Go, runtime.GOOS, runtime.GOARCH, Protocol)
	return err
}

// Fields are the build information as named values, for JSON output.
func (i Info) Fields() map[string]any {
	m := map[string]any{
		"version":  i.String(),
		"commit":   i.Commit,
		"modified": i.Modified,
		"go":       i.Go,
		"protocol": Protocol,
	}
	if !i.Time.IsZero() {
		m["commit_time"] = i.Time.UTC().Format(time.RFC3339)
	}
	return m
}

// Server returns nri-grpc's version in one word (Info.String of Get).
func Server() string { return Get().String() }

// NRI returns the value of the nri_version fields: protocol and server
// version, for example "v1beta1 nri-grpc/v0.3.0".
func NRI() string { return Protocol + " nri-grpc/" + Server() }
