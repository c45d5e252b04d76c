package wasmbuild

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// cache is the test binary's cache, as the package documentation shows.
var cache *Cache

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasmbuild-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cache = NewCache(dir)
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// checkMagic fails t unless the file at path starts like a WASM module.
func checkMagic(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, Magic) {
		t.Fatalf("%s starts with %q, not the WASM magic", path, b[:min(len(b), len(Magic))])
	}
}

func TestBuildExample(t *testing.T) {
	out := filepath.Join(t.TempDir(), "30-wasm-adjuster")
	if err := Build(t.Context(), "./examples/wasm-adjuster", out); err != nil {
		t.Fatal(err)
	}
	checkMagic(t, out)
}

func TestBuildFailureCarriesOutput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "none.wasm")
	err := Build(t.Context(), "./internal/wasmbuild/no-such-package", out)
	if err == nil {
		t.Fatal("Build of a missing package succeeded")
	}
	if !strings.Contains(err.Error(), "no-such-package") {
		t.Errorf("error does not carry the go command's output: %v", err)
	}
	if _, statErr := os.Stat(out); statErr == nil {
		t.Errorf("failed build left %s behind", out)
	}
}

func TestBuildAbsoluteDirOutsideModule(t *testing.T) {
	err := Build(t.Context(), t.TempDir(), filepath.Join(t.TempDir(), "x.wasm"))
	if err == nil || !strings.Contains(err.Error(), "not inside the module") {
		t.Fatalf("Build outside the module: %v", err)
	}
}

func TestCacheBuildsOnce(t *testing.T) {
	const callers = 4
	paths := make([]string, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			// Every spelling names the same package.
			pkg := []string{"examples/wasm-adjuster", "./examples/wasm-adjuster", "examples/wasm-adjuster/", "examples//wasm-adjuster"}[i]
			paths[i] = cache.Path(t, pkg)
		})
	}
	wg.Wait()
	for i, p := range paths {
		if p != paths[0] {
			t.Fatalf("caller %d got %s, caller 0 got %s", i, p, paths[0])
		}
	}
	checkMagic(t, paths[0])

	info, err := os.Stat(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if again := cache.Path(t, "examples/wasm-adjuster"); again != paths[0] {
		t.Fatalf("second request got %s, first %s", again, paths[0])
	}
	after, err := os.Stat(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(info.ModTime()) {
		t.Error("second request rebuilt the module")
	}
}

func TestWasmGoflags(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "-buildvcs=false"},
		{"-race -mod=mod", "-buildvcs=false -mod=mod"},
		{"-buildvcs=true -cover -covermode=atomic -coverpkg=./... -trimpath", "-buildvcs=false -trimpath"},
		{"--msan -asan -buildmode=pie -tags=foo", "-buildvcs=false -tags=foo"},
	} {
		if got := wasmGoflags(tc.in); got != tc.want {
			t.Errorf("wasmGoflags(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
