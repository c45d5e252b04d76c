package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

var when = time.Date(2026, 12, 2, 4, 30, 0, 0, time.UTC)

// binaries: nrid with three modules, one of them a replacement, and nrictl
// sharing one of them.
func binaries() []Binary {
	return []Binary{
		{Name: "nrid", SHA256: strings.Repeat("a", 64), Info: &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Path:      "github.com/nri-grpc/nri-grpc/cmd/nrid",
			Main:      debug.Module{Path: mainModule, Version: "(devel)"},
			Deps: []*debug.Module{
				{Path: "google.golang.org/grpc", Version: "v1.85.0", Sum: "h1:grpc="},
				{Path: "example.com/old", Version: "v1.0.0", Sum: "h1:old=", Replace: &debug.Module{Path: "example.com/new", Version: "v2.0.0", Sum: "h1:new="}},
				{Path: "github.com/BurntSushi/toml", Version: "v1.5.0", Sum: "h1:toml="},
			},
			Settings: []debug.BuildSetting{{Key: "CGO_ENABLED", Value: "0"}, {Key: "GOARCH", Value: "arm64"}},
		}},
		{Name: "nrictl", SHA256: strings.Repeat("b", 64), Info: &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Path:      "github.com/nri-grpc/nri-grpc/cmd/nrictl",
			Main:      debug.Module{Path: mainModule, Version: "(devel)"},
			Deps:      []*debug.Module{{Path: "google.golang.org/grpc", Version: "v1.85.0", Sum: "h1:grpc="}},
		}},
	}
}

func TestNewBOM(t *testing.T) {
	bom := NewBOM("v0.1.0", when, binaries())
	data, err := Marshal(bom)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("the SBOM is not JSON: %v", err)
	}
	if back["bomFormat"] != "CycloneDX" || back["specVersion"] != "1.5" {
		t.Errorf("bomFormat %v, specVersion %v", back["bomFormat"], back["specVersion"])
	}
	if got := bom.Metadata.Component; got.Name != mainModule || got.Version != "v0.1.0" || got.PURL != "pkg:golang/github.com/nri-grpc/nri-grpc@v0.1.0" {
		t.Errorf("metadata.component = %+v", got)
	}
	if bom.Metadata.Timestamp != "2026-12-02T04:30:00Z" {
		t.Errorf("timestamp %q", bom.Metadata.Timestamp)
	}

	var refs []string
	byRef := map[string]Component{}
	for _, c := range bom.Components {
		refs = append(refs, c.BOMRef)
		byRef[c.BOMRef] = c
	}
	// The binaries in their order, then each module once, sorted.
	want := []string{
		"binary:nrid", "binary:nrictl",
		"pkg:golang/example.com/new@v2.0.0",
		"pkg:golang/github.com/BurntSushi/toml@v1.5.0",
		"pkg:golang/google.golang.org/grpc@v1.85.0",
	}
	if strings.Join(refs, " ") != strings.Join(want, " ") {
		t.Errorf("components %v, want %v", refs, want)
	}
	nrid := byRef["binary:nrid"]
	if nrid.Hashes[0] != (Hash{"SHA-256", strings.Repeat("a", 64)}) || nrid.prop(propGo) != "go1.26.8" ||
		nrid.prop(propSetting+"GOARCH") != "arm64" || nrid.prop(propPackage) != "github.com/nri-grpc/nri-grpc/cmd/nrid" {
		t.Errorf("nrid = %+v", nrid)
	}
	repl := byRef["pkg:golang/example.com/new@v2.0.0"]
	if repl.prop(propH1) != "h1:new=" || repl.prop(propReplaces) != "example.com/old@v1.0.0" || repl.Type != "library" {
		t.Errorf("the replacement = %+v", repl)
	}
	if _, ok := byRef["pkg:golang/example.com/old@v1.0.0"]; ok {
		t.Error("the replaced module is a component")
	}

	deps := map[string]string{}
	for _, d := range bom.Dependencies {
		deps[d.Ref] = strings.Join(d.DependsOn, " ")
	}
	for ref, want := range map[string]string{
		"pkg:golang/github.com/nri-grpc/nri-grpc@v0.1.0": "binary:nrid binary:nrictl",
		"binary:nrid":   "pkg:golang/example.com/new@v2.0.0 pkg:golang/github.com/BurntSushi/toml@v1.5.0 pkg:golang/google.golang.org/grpc@v1.85.0",
		"binary:nrictl": "pkg:golang/google.golang.org/grpc@v1.85.0",
	} {
		if deps[ref] != want {
			t.Errorf("%s depends on %q, want %q", ref, deps[ref], want)
		}
	}
	if len(deps) != 3 {
		t.Errorf("dependencies %v", deps)
	}
}

func TestNewBOMReproducible(t *testing.T) {
	a, _ := Marshal(NewBOM("v0.1.0", when, binaries()))
	b, _ := Marshal(NewBOM("v0.1.0", when, binaries()))
	if !bytes.Equal(a, b) {
		t.Fatal("the same binaries gave two SBOMs")
	}
	bins := binaries()
	bins[1].Info.Deps[0] = &debug.Module{Path: "google.golang.org/grpc", Version: "v1.85.1", Sum: "h1:other="}
	s1, s2 := NewBOM("v0.1.0", when, binaries()).SerialNumber, NewBOM("v0.1.0", when, bins).SerialNumber
	if s1 == s2 {
		t.Errorf("another module version, the same serial number %s", s1)
	}
	if !strings.HasPrefix(s1, "urn:uuid:") || len(s1) != len("urn:uuid:")+36 || s1[len("urn:uuid:")+14] != '5' {
		t.Errorf("serial number %q is not a version 5 urn:uuid", s1)
	}
}

// goVersionM is `go version -m` of the binaries above (the replacement as Go
// prints it), with Go's build lines.
const goVersionM = `/tmp/r/nrid: go1.26.8
	path	github.com/nri-grpc/nri-grpc/cmd/nrid
	mod	github.com/nri-grpc/nri-grpc	(devel)	
	dep	example.com/old	v1.0.0	h1:old=
	=>	example.com/new	v2.0.0	h1:new=
	dep	github.com/BurntSushi/toml	v1.5.0	h1:toml=
	dep	google.golang.org/grpc	v1.85.0	h1:grpc=
	build	-trimpath=true
	build	CGO_ENABLED=0
/tmp/r/nrictl: go1.26.8
	path	github.com/nri-grpc/nri-grpc/cmd/nrictl
	mod	github.com/nri-grpc/nri-grpc	(devel)	
	dep	google.golang.org/grpc	v1.85.0	h1:grpc=
	build	-ldflags="-s -w"
`

func TestParseGoVersionM(t *testing.T) {
	got, err := ParseGoVersionM(strings.NewReader(goVersionM))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range got["nrid"].Modules {
		keys = append(keys, m.Key())
	}
	if want := "example.com/new@v2.0.0 h1:new=,github.com/BurntSushi/toml@v1.5.0 h1:toml=,google.golang.org/grpc@v1.85.0 h1:grpc="; strings.Join(keys, ",") != want {
		t.Errorf("nrid's modules %q, want %q", keys, want)
	}
	if len(got) != 2 || got["nrid"].GoVersion != "go1.26.8" || len(got["nrictl"].Modules) != 1 {
		t.Errorf("parsed %+v", got)
	}
	for _, bad := range []string{"", "\tdep\tx\tv1\n", "nrid: go1\n\t=>\tx\tv1\n", "nrid: go1\n\tdep\tx\n"} {
		if _, err := ParseGoVersionM(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseGoVersionM(%q) accepted it", bad)
		}
	}
}

func TestCheckSBOM(t *testing.T) {
	data, _ := Marshal(NewBOM("v0.1.0", when, binaries()))
	sums := map[string]string{"nrid": strings.Repeat("a", 64), "nrictl": strings.Repeat("b", 64)}
	listed := func(edit func(string) string) map[string]Listed {
		l, err := ParseGoVersionM(strings.NewReader(edit(goVersionM)))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	same := func(s string) string { return s }
	if err := CheckSBOM(data, listed(same), sums); err != nil {
		t.Fatalf("the SBOM of the binaries: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(string) string
		sums map[string]string
		want string
	}{
		{"a module more", func(s string) string {
			return strings.Replace(s, "\tbuild\t-trimpath", "\tdep\tgolang.org/x/net\tv0.1.0\th1:net=\n\tbuild\t-trimpath", 1)
		}, sums, "nrid: the SBOM lacks golang.org/x/net@v0.1.0 h1:net="},
		{"a module less", func(s string) string {
			return strings.Replace(s, "\tdep\tgithub.com/BurntSushi/toml\tv1.5.0\th1:toml=\n", "", 1)
		},
			sums, "nrid: the SBOM lists github.com/BurntSushi/toml@v1.5.0 h1:toml=, go version -m does not"},
		{"another h1", func(s string) string { return strings.Replace(s, "h1:new=", "h1:changed=", 1) },
			sums, "nrid: the SBOM lacks example.com/new@v2.0.0 h1:changed="},
		{"the replaced module", func(s string) string { return strings.Replace(s, "\t=>\texample.com/new\tv2.0.0\th1:new=\n", "", 1) },
			sums, "nrid: the SBOM lacks example.com/old@v1.0.0 h1:old="},
		{"another Go", func(s string) string { return strings.Replace(s, "nrictl: go1.26.8", "nrictl: go1.26.9", 1) },
			sums, `nrictl: Go version "go1.26.8", go version -m says "go1.26.9"`},
		{"a binary more", func(s string) string { return s + "/tmp/r/nritest: go1.26.8\n" }, sums, "nritest: not in the SBOM"},
		{"a binary less", func(s string) string { return s[:strings.Index(s, "/tmp/r/nrictl")] }, sums, "nrictl: in the SBOM, not in go version -m's output"},
		{"another file", same, map[string]string{"nrid": strings.Repeat("c", 64)}, "nrid: the SBOM's SHA-256 is not the file's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckSBOM(data, listed(c.edit), c.sums)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("CheckSBOM: %v, want %q", err, c.want)
			}
		})
	}
	if err := CheckSBOM([]byte(`{"bomFormat":"SPDX"}`), listed(same), sums); err == nil || !strings.Contains(err.Error(), "not a CycloneDX 1.5") {
		t.Errorf("CheckSBOM of another format: %v", err)
	}
}

// build compiles a program that does nothing for GOOS=linux GOARCH=arch
// with CGO_ENABLED=0 and the flags.
func build(t *testing.T, arch string, flags ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command")
	}
	dir := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module example.com/noop\n\ngo 1.24\n",
		"main.go": "package main\n\nfunc main() {}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "noop")
	cmd := exec.Command(gobin, append(append([]string{"build", "-buildvcs=false"}, flags...), "-o", out, ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func TestCheckELF(t *testing.T) {
	bin := build(t, "arm64", "-trimpath", "-ldflags=-s -w")
	if err := checkELF(bin, "arm64"); err != nil {
		t.Errorf("a static arm64 binary: %v", err)
	}
	if err := checkELF(bin, "amd64"); err == nil || !strings.Contains(err.Error(), "machine EM_AARCH64, want EM_X86_64") {
		t.Errorf("an arm64 binary as amd64: %v", err)
	}
	if err := checkELF(bin, "riscv64"); err == nil {
		t.Error("riscv64 accepted")
	}
	untrimmed := build(t, "amd64")
	if err := checkELF(untrimmed, "amd64"); err == nil || !strings.Contains(err.Error(), `build setting -trimpath="", want "true"`) {
		t.Errorf("a binary built without -trimpath: %v", err)
	}

	// A dynamically linked executable: an interpreter and a dynamic
	// section, as the kernel and ld.so read them.
	dyn := filepath.Join(t.TempDir(), "dyn")
	var b bytes.Buffer
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: 2}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	_ = binary.Write(&b, binary.LittleEndian, h)
	_ = binary.Write(&b, binary.LittleEndian, elf.Prog64{Type: uint32(elf.PT_INTERP)})
	_ = binary.Write(&b, binary.LittleEndian, elf.Prog64{Type: uint32(elf.PT_DYNAMIC)})
	if err := os.WriteFile(dyn, b.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	err := checkELF(dyn, "amd64")
	if err == nil || !strings.Contains(err.Error(), "has a program interpreter") || !strings.Contains(err.Error(), "has a dynamic section") {
		t.Errorf("a dynamic executable: %v", err)
	}
}

// TestRun writes and checks the SBOM of a real binary through the command
// line, against the real `go version -m`.
func TestRun(t *testing.T) {
	bin := build(t, "amd64")
	dir := t.TempDir()
	sbom, gomod := filepath.Join(dir, "sbom.cdx.json"), filepath.Join(dir, "gomod.txt")
	var stdout, stderr bytes.Buffer
	if rc := run([]string{"sbom", "-o", sbom, "-version", "v0.1.0", "-time", "2026-12-02T04:30:00+01:00", bin}, &stdout, &stderr); rc != 0 {
		t.Fatalf("release sbom: exit %d: %s", rc, stderr.String())
	}
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	if err := os.WriteFile(gomod, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if rc := run([]string{"check-sbom", "-sbom", sbom, "-gomod", gomod, bin}, &stdout, &stderr); rc != 0 {
		t.Fatalf("release check-sbom: exit %d: %s", rc, stderr.String())
	}
	data, _ := os.ReadFile(sbom)
	if !bytes.Contains(data, []byte(`"timestamp": "2026-12-02T03:30:00Z"`)) {
		t.Errorf("the SBOM's timestamp is not -time in UTC:\n%s", data)
	}
	// The binary changed after its SBOM was written.
	if err := os.WriteFile(bin, append(out, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if rc := run([]string{"check-sbom", "-sbom", sbom, "-gomod", gomod, bin}, &stdout, &stderr); rc != 1 || !strings.Contains(stderr.String(), "SHA-256 is not the file's") {
		t.Errorf("check-sbom of a changed binary: exit %d: %s", rc, stderr.String())
	}
	if rc := run([]string{"sbom", "-o", sbom}, &stdout, &stderr); rc != 2 {
		t.Errorf("sbom without binaries: exit %d", rc)
	}
}
