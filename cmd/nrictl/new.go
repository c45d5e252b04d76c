package main

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"text/template"

	"github.com/nri-grpc/nri-grpc/internal/version"
	nriplugin "github.com/nri-grpc/nri-grpc/plugin"
)

// templates are the project templates of `nrictl new`: one directory per
// language, and shared/ (rendered into every project). A file's path is its
// path in the project, less the ".tmpl" suffix; "_mod_" in a name becomes
// the project's identifier (the Python module name).
//
//go:embed all:templates
var templates embed.FS

// The SDK versions the templates depend on when no -sdk checkout is given:
// those of clients/python (src/nri_grpc/_version.py), clients/typescript
// (package.json) and clients/rust (Cargo.toml) in the tree nrictl is built
// from (TestNewSDKVersions compares them).
const (
	pythonSDKVersion = "0.1.0"
	tsSDKVersion     = "0.1.0"
	rustSDKVersion   = "0.1.0"
)

// langs are the languages of `nrictl new --lang`.
var langs = []string{"go", "python", "typescript", "rust"}

// scaffold is what the templates are rendered with.
type scaffold struct {
	Lang  string // go, python, typescript or rust
	Name  string // the plugin name, "hello"
	Index string // the plugin index, "10"
	// Ident is Name as a package name: lower case, [a-z0-9-], starting with
	// a letter (npm, Cargo, the image and the DaemonSet).
	Ident string
	// Snake is Ident with '_' for '-' (the Python module, the Rust library).
	Snake string
	// Module is the Go module path.
	Module string
	// GoVersion is the go directive of go.mod ("1.26.8").
	GoVersion string
	// SDKVersion is the version of the SDK the project depends on ("" for
	// Go when nrictl knows no released version: go mod tidy picks the
	// latest).
	SDKVersion string
	// SDK is the absolute path of an nri-grpc checkout the project uses
	// instead of a released SDK, "" for none.
	SDK string
}

// Full is the plugin's full name, "10-hello".
func (s scaffold) Full() string { return s.Index + "-" + s.Name }

// runNew writes a new plugin project from the templates.
func runNew(_ context.Context, g *globals, args []string) error {
	flags := flag.NewFlagSet("nrictl new", flag.ContinueOnError)
	flags.SetOutput(g.stderr)
	lang := flags.String("lang", "", "the SDK's language: "+strings.Join(langs, ", ")+" (required)")
	name := flags.String("name", "", "the plugin name, [a-zA-Z0-9_.+-] (default: DIR's base name)")
	index := flags.String("index", "50", "the plugin index, two digits 00-99: the order among plugins")
	module := flags.String("module", "", "the Go module path (default example.com/NAME)")
	sdk := flags.String("sdk", "", "use the SDK of this nri-grpc checkout instead of a released one (a replace or path dependency)")
	flags.Usage = func() {
		fmt.Fprintf(flags.Output(), `usage: nrictl new --lang go|python|typescript|rust [--name NAME] [--index NN] [--module M] [--sdk DIR] DIR

Writes a ready-to-build plugin project into DIR (which must not exist or be
empty): a small plugin that adds environment variables to every container it
sees created (its Configure configuration chooses them), a test with the SDK's
test facilities, a README (build, test, run against nrid, deploy), a
Containerfile and a Kubernetes DaemonSet.

flags:
`)
		flags.PrintDefaults()
	}
	dir, err := parseNew(flags, args)
	if err != nil {
		return err
	}
	s, err := newScaffold(*lang, *name, *index, *module, *sdk, dir)
	if err != nil {
		return err
	}
	files, err := render(s)
	if err != nil {
		return err
	}
	if s.SDK != "" && s.Lang == "go" {
		// The checkout's go.sum: the project builds with the versions the
		// SDK was tested with, without the checksum database.
		sum, err := os.ReadFile(filepath.Join(s.SDK, "go.sum"))
		if err != nil {
			return err
		}
		files["go.sum"] = sum
	}
	if err := writeProject(dir, files); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "created %s plugin %s in %s; next: %s/README.md\n", s.Lang, s.Full(), dir, dir)
	return nil
}

// parseNew parses the flags of new, before and after DIR, and returns DIR.
func parseNew(flags *flag.FlagSet, args []string) (string, error) {
	var pos []string
	for {
		if err := flags.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return "", err
			}
			return "", usageError{err.Error()}
		}
		if flags.NArg() == 0 {
			break
		}
		pos = append(pos, flags.Arg(0))
		args = flags.Args()[1:]
	}
	switch len(pos) {
	case 0:
		return "", usagef("new: no directory given")
	case 1:
		return pos[0], nil
	default:
		return "", usagef("new: unexpected argument %q", pos[1])
	}
}

// newScaffold checks the options of new.
func newScaffold(lang, name, index, module, sdk, dir string) (scaffold, error) {
	if lang == "" {
		return scaffold{}, usagef("new: --lang is required: %s", strings.Join(langs, ", "))
	}
	lang = strings.ToLower(lang)
	switch lang {
	case "ts":
		lang = "typescript"
	case "py":
		lang = "python"
	case "golang":
		lang = "go"
	}
	if !slices.Contains(langs, lang) {
		return scaffold{}, usagef("new: --lang %q: use %s", lang, strings.Join(langs, ", "))
	}
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	if err := nriplugin.CheckName(name); err != nil {
		return scaffold{}, usagef("new: --name: %v", err)
	}
	if err := nriplugin.CheckIndex(index); err != nil {
		return scaffold{}, usagef("new: --index: %v (00-99)", err)
	}
	ident := identifier(name)
	if module == "" {
		module = "example.com/" + ident
	}
	if strings.ContainsAny(module, " \t\n\"'`\\") || strings.HasPrefix(module, "/") {
		return scaffold{}, usagef("new: --module %q is not a module path", module)
	}
	s := scaffold{
		Lang: lang, Name: name, Index: index, Ident: ident, Snake: strings.ReplaceAll(ident, "-", "_"),
		Module: module, GoVersion: goVersion(runtime.Version()),
	}
	if sdk != "" {
		abs, err := filepath.Abs(sdk)
		if err != nil {
			return scaffold{}, err
		}
		if _, err := os.Stat(filepath.Join(abs, "plugin", "plugin.go")); err != nil {
			return scaffold{}, usagef("new: --sdk %s: not an nri-grpc checkout (no plugin/plugin.go)", sdk)
		}
		s.SDK = abs
	}
	switch lang {
	case "go":
		s.SDKVersion = goSDKVersion(version.Get().Version)
	case "python":
		s.SDKVersion = pythonSDKVersion
	case "typescript":
		s.SDKVersion = tsSDKVersion
	case "rust":
		s.SDKVersion = rustSDKVersion
	}
	return s, nil
}

// identifier turns a plugin name into a package name: lower case, runs of
// characters other than [a-z0-9] become one '-', and it starts with a
// letter ("10x.Hello" becomes "nri-10x-hello").
func identifier(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	id := strings.TrimRight(b.String(), "-")
	if id == "" || id[0] < 'a' || id[0] > 'z' {
		id = strings.TrimRight("nri-"+id, "-")
	}
	return id
}

// goVersion is the go directive for the toolchain that built nrictl, which
// nri-grpc's own go directive allows: "go1.26.8" gives "1.26.8".
func goVersion(v string) string {
	m := regexp.MustCompile(`^go(\d+\.\d+(\.\d+)?)`).FindStringSubmatch(v)
	if m == nil {
		return "1.26.8"
	}
	return m[1]
}

// releaseVersion matches a release or a Go pseudo-version: versions the Go
// module proxy can resolve (not git describe's "v0.3.0-5-gabcdef", not
// "+dirty").
var releaseVersion = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?$|^v\d+\.\d+\.\d+-(\d+\.)?\d{14}-[0-9a-f]{12}$`)

// goSDKVersion is the version of github.com/nri-grpc/nri-grpc for go.mod:
// the one nrictl was built from when it is a module version, else "".
func goSDKVersion(v string) string {
	if strings.Contains(v, "dirty") || strings.Contains(v, "-g") || !releaseVersion.MatchString(v) {
		return ""
	}
	return v
}

// render renders the templates of s.Lang and the shared ones: project
// path to contents.
func render(s scaffold) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, root := range []string{"templates/" + s.Lang, "templates/shared"} {
		err := fs.WalkDir(templates, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			src, err := templates.ReadFile(p)
			if err != nil {
				return err
			}
			t, err := template.New(p).Option("missingkey=error").Parse(string(src))
			if err != nil {
				return fmt.Errorf("template %s: %w", p, err)
			}
			var buf bytes.Buffer
			if err := t.Execute(&buf, s); err != nil {
				return fmt.Errorf("template %s: %w", p, err)
			}
			rel := strings.TrimSuffix(strings.TrimPrefix(p, root+"/"), ".tmpl")
			rel = strings.ReplaceAll(rel, "_mod_", s.Snake)
			if _, dup := files[rel]; !dup {
				files[rel] = buf.Bytes()
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

// writeProject writes files into dir, which must not exist or be empty.
func writeProject(dir string, files map[string][]byte) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("new: %s exists and is not empty: not overwriting it", dir)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if path.Ext(name) == ".sh" {
			mode = 0o755
		}
		if err := os.WriteFile(p, files[name], mode); err != nil {
			return err
		}
	}
	return nil
}
