package main

import (
	"bytes"
	"context"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// repoRoot is the root of this checkout (the test runs in cmd/nrictl).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// runNewCmd runs `nrictl new` with args.
func runNewCmd(args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := run(context.Background(), append([]string{"new"}, args...), func(string) string { return "" }, &out, &errb)
	return out.String(), errb.String(), err
}

// TestNewGo generates the Go template against this checkout, then vets it
// and runs its test: the generated plugin against a real in-process server.
func TestNewGo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a generated module")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := filepath.Join(t.TempDir(), "hello")
	if out, errOut, err := runNewCmd("--lang", "go", "--name", "hello", "--index", "10", "--sdk", repoRoot(t), dir); err != nil {
		t.Fatalf("nrictl new: %v\n%s%s", err, out, errOut)
	}
	for _, f := range []string{"go.mod", "go.sum", "main.go", "plugin.go", "plugin_test.go", "README.md", "Containerfile", "deploy/daemonset.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("generated project: %v", err)
		}
	}
	// -mod=mod: the build adds the SDK's requirements to go.mod, with the
	// checkout's go.sum (no checksum database, no tidy of the test
	// dependencies of dependencies).
	env := append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"), "GOWORK=off")
	for _, args := range [][]string{{"vet", "./..."}, {"test", "-count=1", "./..."}} {
		start := time.Now()
		cmd := exec.Command(goBin, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("go %s: %v\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
	}
}

// TestNewTemplates renders every language's template: each file is there,
// Go sources are gofmt'ed, and the identity is in the files that carry it.
func TestNewTemplates(t *testing.T) {
	want := map[string][]string{
		"go":         {"go.mod", "main.go", "plugin.go", "plugin_test.go"},
		"python":     {"pyproject.toml", "hello_x.py", "tests/test_plugin.py"},
		"typescript": {"package.json", "tsconfig.json", "src/plugin.ts", "src/main.ts", "test/plugin.test.ts"},
		"rust":       {"Cargo.toml", "src/lib.rs", "src/main.rs", "tests/plugin.rs"},
	}
	for _, lang := range langs {
		t.Run(lang, func(t *testing.T) {
			s, err := newScaffold(lang, "Hello.x", "42", "", "", "ignored")
			if err != nil {
				t.Fatal(err)
			}
			files, err := render(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range append(want[lang], "README.md", "Containerfile", "deploy/daemonset.yaml") {
				if _, ok := files[f]; !ok {
					t.Errorf("no %s in %s", f, strings.Join(keys(files), " "))
				}
			}
			for name, b := range files {
				if strings.HasSuffix(name, ".go") {
					if f, err := format.Source(b); err != nil || !bytes.Equal(f, b) {
						t.Errorf("%s is not gofmt'ed (%v)", name, err)
					}
				}
				if strings.Contains(string(b), "<no value>") {
					t.Errorf("%s: a template field rendered as <no value>", name)
				}
			}
			if ds := string(files["deploy/daemonset.yaml"]); !strings.Contains(ds, "/var/run/nri/plugins/42-Hello.x.sock") ||
				!strings.Contains(ds, "name: hello-x") || !strings.Contains(ds, "tolerate-missing-plugins.noderesource.dev") ||
				!strings.Contains(ds, "runAsUser: 0") || !strings.Contains(ds, "path: /var/run/nri") {
				t.Errorf("deploy/daemonset.yaml:\n%s", ds)
			}
		})
	}
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestNewRefuses checks the command line: a missing or unknown language, an
// invalid name or index, a non-empty directory are refused, and nothing is
// written.
func TestNewRefuses(t *testing.T) {
	tmp := t.TempDir()
	full := filepath.Join(tmp, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "keep"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(tmp, "fresh")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{fresh}, "--lang is required"},
		{[]string{"--lang", "cobol", fresh}, `--lang "cobol"`},
		{[]string{"--lang", "go", "--name", "a/b", fresh}, "allowed are [a-zA-Z0-9_.+-]"},
		{[]string{"--lang", "go", "--index", "100", fresh}, "exactly two ASCII digits"},
		{[]string{"--lang", "go", "--index", "7", fresh}, "exactly two ASCII digits"},
		{[]string{"--lang", "go"}, "no directory given"},
		{[]string{"--lang", "go", fresh, "other"}, `unexpected argument "other"`},
		{[]string{"--lang", "go", "--sdk", tmp, fresh}, "not an nri-grpc checkout"},
		{[]string{"--lang", "go", full}, "exists and is not empty"},
	} {
		_, errOut, err := runNewCmd(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("new %s: %v (stderr %q), want an error with %q", strings.Join(tc.args, " "), err, errOut, tc.want)
		}
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("a refused new wrote %s: %v", fresh, err)
	}
	if b, err := os.ReadFile(filepath.Join(full, "keep")); err != nil || string(b) != "mine" {
		t.Errorf("the non-empty directory was touched: %q %v", b, err)
	}
	// Flags after DIR work too, and an empty directory is fine.
	empty := filepath.Join(tmp, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	out, _, err := runNewCmd(empty, "--lang", "python", "--index", "07")
	if err != nil || !strings.Contains(out, "created python plugin 07-empty") {
		t.Errorf("new into an empty directory: %v %q", err, out)
	}
}

// TestNewSDKVersions checks that the SDK versions the templates depend on
// are those of the SDKs in this tree.
func TestNewSDKVersions(t *testing.T) {
	root := repoRoot(t)
	for _, c := range []struct {
		file, rx, have string
	}{
		{"clients/python/src/nri_grpc/_version.py", `(?m)^__version__ = "([^"]+)"`, pythonSDKVersion},
		{"clients/typescript/package.json", `(?m)^  "version": "([^"]+)"`, tsSDKVersion},
		{"clients/rust/Cargo.toml", `(?m)^version = "([^"]+)"`, rustSDKVersion},
	} {
		b, err := os.ReadFile(filepath.Join(root, c.file))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(c.rx).FindSubmatch(b)
		if m == nil || string(m[1]) != c.have {
			t.Errorf("%s: version %q, nrictl new writes %q", c.file, m, c.have)
		}
	}
}

func TestIdentifier(t *testing.T) {
	for in, want := range map[string]string{
		"hello": "hello", "Hello.X": "hello-x", "10x": "nri-10x", "a__b--c": "a-b-c", "_x_": "x", "+": "nri", "my-plugin": "my-plugin",
	} {
		if got := identifier(in); got != want {
			t.Errorf("identifier(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"v0.3.0": "v0.3.0", "v0.3.0-rc.1": "v0.3.0-rc.1", "v0.0.0-20261125215100-5c2c1ecabcde": "v0.0.0-20261125215100-5c2c1ecabcde",
		"v0.3.0-5-g5c2c1ecabcde": "", "v0.3.0+dirty": "", "": "", "devel": "",
	} {
		if got := goSDKVersion(in); got != want {
			t.Errorf("goSDKVersion(%q) = %q, want %q", in, got, want)
		}
	}
}
