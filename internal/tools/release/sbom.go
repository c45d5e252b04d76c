package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// mainModule is the module every released binary is built from.
const mainModule = "github.com/nri-grpc/nri-grpc"

// Property names of the SBOM, in our own namespace (CycloneDX's advice for
// properties outside its taxonomy).
const (
	propH1       = "nri-grpc:go:h1"       // a module's go.sum hash ("h1:...")
	propReplaces = "nri-grpc:go:replaces" // the module a replacement stands for (path@version)
	propGo       = "nri-grpc:go:version"  // the toolchain that built a binary
	propPackage  = "nri-grpc:go:package"  // a binary's main package
	propSetting  = "nri-grpc:go:build:"   // prefix of a binary's build settings (GOOS, -ldflags, ...)
)

// Binary is one released binary: its file name, SHA-256 and build
// information.
type Binary struct {
	// Name is the file name ("nrid").
	Name string
	// SHA256 is the hex SHA-256 of the file.
	SHA256 string
	// Info is what Go recorded in it.
	Info *debug.BuildInfo
}

// ReadBinary reads the build information and the SHA-256 of the binary at
// path.
func ReadBinary(path string) (Binary, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return Binary{}, fmt.Errorf("build information of %s: %w", path, err)
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return Binary{}, err
	}
	return Binary{Name: filepath.Base(path), SHA256: sum, Info: info}, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read only
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// BOM is a CycloneDX 1.5 JSON document, the part of the schema we write.
type BOM struct {
	BOMFormat    string       `json:"bomFormat"`
	SpecVersion  string       `json:"specVersion"`
	SerialNumber string       `json:"serialNumber,omitempty"`
	Version      int          `json:"version"`
	Metadata     Metadata     `json:"metadata"`
	Components   []Component  `json:"components"`
	Dependencies []Dependency `json:"dependencies"`
}

// Metadata is the BOM's metadata: when, by what, and about what.
type Metadata struct {
	Timestamp string    `json:"timestamp"`
	Tools     Tools     `json:"tools"`
	Component Component `json:"component"`
}

// Tools lists the tools that made the BOM (CycloneDX 1.5: as components).
type Tools struct {
	Components []Component `json:"components"`
}

// Component is a CycloneDX component: the release, a binary or a module.
type Component struct {
	Type       string     `json:"type"`
	BOMRef     string     `json:"bom-ref,omitempty"`
	Name       string     `json:"name"`
	Version    string     `json:"version,omitempty"`
	PURL       string     `json:"purl,omitempty"`
	Hashes     []Hash     `json:"hashes,omitempty"`
	Licenses   []License  `json:"licenses,omitempty"`
	Properties []Property `json:"properties,omitempty"`
}

// Hash is a component's hash.
type Hash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

// License is a component's license, as an SPDX identifier.
type License struct {
	License struct {
		ID string `json:"id"`
	} `json:"license"`
}

// Property is a name and value outside the CycloneDX schema.
type Property struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Dependency says which components a component depends on.
type Dependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

// Module is one Go module a binary was linked with, as it was used: a
// replacement replaces its original.
type Module struct {
	// Path and Version are the module's ("google.golang.org/grpc",
	// "v1.85.0"); Version is empty for a directory replacement.
	Path, Version string
	// Sum is its go.sum hash ("h1:..."), empty when Go recorded none.
	Sum string
	// Replaces is the replaced module (path@version), empty when none.
	Replaces string
}

// Key is the module as `go version -m` identifies it: path@version and h1.
func (m Module) Key() string { return m.Path + "@" + m.Version + " " + m.Sum }

// Modules returns the modules info lists as linked, sorted by path then
// version; the main module is not among them.
func Modules(info *debug.BuildInfo) []Module {
	var mods []Module
	for _, d := range info.Deps {
		m := Module{Path: d.Path, Version: d.Version, Sum: d.Sum}
		if r := d.Replace; r != nil {
			m = Module{Path: r.Path, Version: r.Version, Sum: r.Sum, Replaces: d.Path + "@" + d.Version}
		}
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool {
		if mods[i].Path != mods[j].Path {
			return mods[i].Path < mods[j].Path
		}
		return mods[i].Version < mods[j].Version
	})
	return mods
}

// purl is the package URL of a Go module (pkg:golang/PATH@VERSION); the
// path's segments keep their case, as the module path has it.
func purl(path, version string) string {
	p := "pkg:golang/" + path
	if version != "" {
		p += "@" + version
	}
	return p
}

func apache() []License {
	var l License
	l.License.ID = "Apache-2.0"
	return []License{l}
}

// NewBOM returns the SBOM of one release archive: the release (the main
// module at version), its binaries and the modules they were linked with.
// The document depends only on its arguments: its serial number is derived
// from its content, so the same binaries give the same bytes.
func NewBOM(version string, t time.Time, bins []Binary) BOM {
	release := Component{
		Type:     "application",
		BOMRef:   purl(mainModule, version),
		Name:     mainModule,
		Version:  version,
		PURL:     purl(mainModule, version),
		Licenses: apache(),
	}
	bom := BOM{
		BOMFormat:   "CycloneDX",
		SpecVersion: "1.5",
		Version:     1,
		Metadata: Metadata{
			Timestamp: t.UTC().Format(time.RFC3339),
			Tools:     Tools{Components: []Component{{Type: "application", Name: "nri-grpc internal/tools/release", Version: version}}},
			Component: release,
		},
		Components:   []Component{},
		Dependencies: []Dependency{},
	}
	modules := map[string]Component{}
	var binRefs []string
	for _, b := range bins {
		ref := "binary:" + b.Name
		binRefs = append(binRefs, ref)
		props := []Property{{propGo, b.Info.GoVersion}, {propPackage, b.Info.Path}}
		for _, s := range b.Info.Settings {
			props = append(props, Property{propSetting + s.Key, s.Value})
		}
		bom.Components = append(bom.Components, Component{
			Type:       "application",
			BOMRef:     ref,
			Name:       b.Name,
			Version:    version,
			Hashes:     []Hash{{"SHA-256", b.SHA256}},
			Licenses:   apache(),
			Properties: props,
		})
		var deps []string
		for _, m := range Modules(b.Info) {
			c := Component{Type: "library", BOMRef: purl(m.Path, m.Version), Name: m.Path, Version: m.Version, PURL: purl(m.Path, m.Version)}
			if m.Sum != "" {
				c.Properties = append(c.Properties, Property{propH1, m.Sum})
			}
			if m.Replaces != "" {
				c.Properties = append(c.Properties, Property{propReplaces, m.Replaces})
			}
			modules[c.BOMRef] = c
			deps = append(deps, c.BOMRef)
		}
		bom.Dependencies = append(bom.Dependencies, Dependency{Ref: ref, DependsOn: deps})
	}
	refs := make([]string, 0, len(modules))
	for ref := range modules {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	for _, ref := range refs {
		bom.Components = append(bom.Components, modules[ref])
	}
	bom.Dependencies = append([]Dependency{{Ref: release.BOMRef, DependsOn: binRefs}}, bom.Dependencies...)
	bom.SerialNumber = serial(bom)
	return bom
}

// serial is a urn:uuid derived from the document without its serial number
// (a version 5 style UUID over its SHA-256).
func serial(bom BOM) string {
	bom.SerialNumber = ""
	data, _ := json.Marshal(bom) // plain structs of strings: cannot fail
	h := sha256.Sum256(data)
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	x := hex.EncodeToString(h[:16])
	return "urn:uuid:" + x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// Marshal is the BOM as written: indented JSON and a final newline.
func Marshal(bom BOM) ([]byte, error) {
	data, err := json.MarshalIndent(bom, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the SBOM: %w", err)
	}
	return append(data, '\n'), nil
}

// prop returns the value of the property name of c, "" when it has none.
func (c Component) prop(name string) string {
	for _, p := range c.Properties {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// CheckSBOM checks the SBOM data against listed (what `go version -m` says
// of each binary, by file name) and sums (each binary's SHA-256, by file
// name): every binary of listed is in the SBOM with the same Go version, its
// SHA-256, and exactly the modules listed (path, version, h1), and the SBOM
// has no other binary.
func CheckSBOM(data []byte, listed map[string]Listed, sums map[string]string) error {
	var bom BOM
	if err := json.Unmarshal(data, &bom); err != nil {
		return fmt.Errorf("the SBOM is not JSON: %w", err)
	}
	var problems []string
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != "1.5" {
		problems = append(problems, fmt.Sprintf("not a CycloneDX 1.5 document (%q %q)", bom.BOMFormat, bom.SpecVersion))
	}
	byRef := map[string]Component{}
	for _, c := range bom.Components {
		byRef[c.BOMRef] = c
	}
	deps := map[string][]string{}
	for _, d := range bom.Dependencies {
		deps[d.Ref] = d.DependsOn
	}
	names := make([]string, 0, len(listed))
	for name := range listed {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		want := listed[name]
		bin, ok := byRef["binary:"+name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: not in the SBOM", name))
			continue
		}
		if got := bin.prop(propGo); got != want.GoVersion {
			problems = append(problems, fmt.Sprintf("%s: Go version %q, go version -m says %q", name, got, want.GoVersion))
		}
		if sum, ok := sums[name]; ok && (len(bin.Hashes) != 1 || bin.Hashes[0].Content != sum) {
			problems = append(problems, fmt.Sprintf("%s: the SBOM's SHA-256 is not the file's (%s)", name, sum))
		}
		got := map[string]bool{}
		for _, ref := range deps["binary:"+name] {
			c, ok := byRef[ref]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: depends on %s, which is not a component", name, ref))
				continue
			}
			got[Module{Path: c.Name, Version: c.Version, Sum: c.prop(propH1)}.Key()] = true
		}
		for _, m := range want.Modules {
			if !got[m.Key()] {
				problems = append(problems, fmt.Sprintf("%s: the SBOM lacks %s", name, m.Key()))
			}
			delete(got, m.Key())
		}
		for k := range got {
			problems = append(problems, fmt.Sprintf("%s: the SBOM lists %s, go version -m does not", name, k))
		}
	}
	for _, c := range bom.Components {
		if name, ok := strings.CutPrefix(c.BOMRef, "binary:"); ok {
			if _, ok := listed[name]; !ok {
				problems = append(problems, fmt.Sprintf("%s: in the SBOM, not in go version -m's output", name))
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%d problems:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return nil
}
