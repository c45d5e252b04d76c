// Package wasmbuild builds WebAssembly NRI plugins (GOOS=wasip1 GOARCH=wasm,
// -buildmode=c-shared) from packages of this module, for tests.
//
// A test binary that needs modules builds each package once through a Cache
// created in TestMain:
//
//	var wasm *wasmbuild.Cache
//
//	func TestMain(m *testing.M) {
//		dir, err := os.MkdirTemp("", "wasm-")
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		wasm = wasmbuild.NewCache(dir)
//		code := m.Run()
//		_ = os.RemoveAll(dir)
//		os.Exit(code)
//	}
//
//	func TestSomething(t *testing.T) {
//		module := wasm.Path(t, "examples/wasm-adjuster")
//		...
//	}
//
// (t.TempDir cannot hold a cache shared by tests: it is removed when its test
// ends.)
package wasmbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Magic is how every WebAssembly module starts: "\0asm" and version 1.
var Magic = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

// tailBytes is how much of the compiler's output an error carries.
const tailBytes = 4096

// ModuleRoot returns the directory of the main module's go.mod, as
// `go env GOMOD` reports it from the current directory.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside a module")
	}
	return filepath.Dir(gomod), nil
}

// Build compiles the package pkgDir into the WebAssembly module out with
// GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 and -buildmode=c-shared, running the
// go command from the module root. pkgDir is a package pattern as the go
// command takes it from the module root ("./examples/wasm-adjuster") or a
// directory; a relative out is relative to the current directory. Flags of
// GOFLAGS that do not apply to wasip1 (-race, -msan, -asan, coverage) are
// dropped. A failed build's error ends with the tail of the compiler output.
func Build(ctx context.Context, pkgDir, out string) error {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return err
	}
	if !filepath.IsAbs(out) {
		if out, err = filepath.Abs(out); err != nil {
			return fmt.Errorf("wasm build of %s: %w", pkgDir, err)
		}
	}
	if filepath.IsAbs(pkgDir) {
		rel, err := filepath.Rel(root, pkgDir)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("wasm build of %s: not inside the module at %s", pkgDir, root)
		}
		pkgDir = rel
	}
	if !strings.HasPrefix(pkgDir, ".") {
		pkgDir = "./" + filepath.ToSlash(pkgDir)
	}

	cmd := exec.CommandContext(ctx, "go", "build", "-buildmode=c-shared", "-o", out, pkgDir)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"GOOS=wasip1",
		"GOARCH=wasm",
		"CGO_ENABLED=0",
		"GOFLAGS="+wasmGoflags(os.Getenv("GOFLAGS")),
	)
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("wasm build of %s: %w\n%s", pkgDir, err, tail(output.Bytes()))
	}
	return nil
}

// wasmGoflags keeps the flags of goflags that a wasip1 build accepts, and
// turns off VCS stamping, which needs git and is of no use to a test module.
func wasmGoflags(goflags string) string {
	kept := []string{"-buildvcs=false"}
	for _, f := range strings.Fields(goflags) {
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		switch {
		case name == "race", name == "msan", name == "asan", name == "buildmode", name == "buildvcs":
		case strings.HasPrefix(name, "cover"):
		default:
			kept = append(kept, f)
		}
	}
	return strings.Join(kept, " ")
}

// tail returns at most the last tailBytes of b, as text.
func tail(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > tailBytes {
		b = append([]byte("..."), b[len(b)-tailBytes:]...)
	}
	return string(b)
}

// Cache builds each package once for a test binary and hands out the path of
// its module. It is safe for concurrent use; concurrent requests for the same
// package wait for one build.
type Cache struct {
	dir string

	mu    sync.Mutex
	built map[string]*entry
}

// entry is one package's build, done once.
type entry struct {
	once sync.Once
	path string
	err  error
}

// NewCache returns a cache that writes modules into dir, which must exist and
// which the caller removes when the test binary is done.
func NewCache(dir string) *Cache {
	return &Cache{dir: dir, built: make(map[string]*entry)}
}

// Path returns the module built from pkg, a package directory relative to the
// module root ("examples/wasm-adjuster"), building it on first use. A failed
// build fails tb (tb.Fatal), and later requests for pkg fail the same way.
func (c *Cache) Path(tb testing.TB, pkg string) string {
	tb.Helper()
	pkg = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(pkg)), "./")
	c.mu.Lock()
	e, ok := c.built[pkg]
	if !ok {
		e = &entry{}
		c.built[pkg] = e
	}
	c.mu.Unlock()

	e.once.Do(func() {
		name := strings.ReplaceAll(pkg, "/", "_") + ".wasm"
		e.path = filepath.Join(c.dir, name)
		e.err = Build(tb.Context(), "./"+pkg, e.path)
	})
	if e.err != nil {
		tb.Fatal(e.err)
	}
	return e.path
}
