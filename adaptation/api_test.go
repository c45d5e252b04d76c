package adaptation_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const (
	upstreamPath = "github.com/containerd/nri/pkg/adaptation"
	dropInPath   = "github.com/nri-grpc/nri-grpc/adaptation"
)

// notCarried are the parts of upstream's exported API the drop-in leaves
// out on purpose, with the reason (docs/embedding.md).
var notCarried = map[string]string{
	// Upstream's Adaptation embeds a sync.Mutex, which exports Lock and
	// Unlock; the drop-in does not hand its lock to the runtime.
	"(*Adaptation).Lock":    "the drop-in's lock is its own",
	"(*Adaptation).Unlock":  "the drop-in's lock is its own",
	"(*Adaptation).TryLock": "the drop-in's lock is its own",
	"Adaptation.Mutex":      "the drop-in's lock is its own",
}

// exportImporter imports packages from the compiler's export data, which
// `go list -export` builds (from the build cache when warm): type-checking
// upstream's dependencies from source would take minutes.
func exportImporter(t *testing.T, pkgs ...string) types.Importer {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}"}, pkgs...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -export: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -export: %v", err)
	}
	files := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), " "); ok && file != "" {
			files[path] = file
		}
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
}

// typeString prints t with qual, without parameter names (the two packages
// name them differently), and a struct with its exported fields only.
func typeString(t types.Type, qual types.Qualifier) string {
	switch t := t.(type) {
	case *types.Signature:
		var b strings.Builder
		b.WriteString("func(")
		for i := range t.Params().Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(typeString(t.Params().At(i).Type(), qual))
		}
		b.WriteString(") (")
		for i := range t.Results().Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(typeString(t.Results().At(i).Type(), qual))
		}
		b.WriteString(")")
		return b.String()
	case *types.Struct:
		var fields []string
		for i := range t.NumFields() {
			if f := t.Field(i); f.Exported() {
				fields = append(fields, f.Name()+" "+typeString(f.Type(), qual))
			}
		}
		return "struct{" + strings.Join(fields, "; ") + "}"
	}
	return types.TypeString(t, qual)
}

// TestUpstreamAPI: every exported identifier of upstream's pkg/adaptation
// v0.12.5 exists in the drop-in with the same kind and type (the two
// packages' own types compared by name), and so does every method of its
// exported types: a runtime compiles against either.
func TestUpstreamAPI(t *testing.T) {
	imp := exportImporter(t, upstreamPath, dropInPath)
	up, err := imp.Import(upstreamPath)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := imp.Import(dropInPath)
	if err != nil {
		t.Fatal(err)
	}
	// Both packages print as "adaptation"; everything else by its path.
	qual := func(p *types.Package) string {
		if p.Path() == upstreamPath || p.Path() == dropInPath {
			return "adaptation"
		}
		return p.Path()
	}
	sig := func(o types.Object) string {
		switch o := o.(type) {
		case *types.TypeName:
			if o.IsAlias() {
				return "= " + types.TypeString(types.Unalias(o.Type()), qual)
			}
			return "type " + typeString(o.Type().Underlying(), qual)
		case *types.Const:
			return "const " + types.TypeString(o.Type(), qual) + " = " + o.Val().ExactString()
		default:
			return types.ObjectString(o, qual)
		}
	}
	names := up.Scope().Names()
	sort.Strings(names)
	checked := 0
	for _, name := range names {
		uo := up.Scope().Lookup(name)
		if !uo.Exported() {
			continue
		}
		oo := ours.Scope().Lookup(name)
		if oo == nil {
			t.Errorf("%s: missing from the drop-in (upstream: %s)", name, sig(uo))
			continue
		}
		checked++
		if _, skip := notCarried[name+".Mutex"]; skip && name == "Adaptation" {
			// Compared below, method by method; its one exported field is
			// the embedded lock.
		} else if us, os := sig(uo), sig(oo); us != os {
			t.Errorf("%s: upstream %s, drop-in %s", name, us, os)
		}
		tn, ok := uo.(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		// The methods of exported defined types, on the pointer.
		ms := types.NewMethodSet(types.NewPointer(uo.Type()))
		oms := types.NewMethodSet(types.NewPointer(oo.Type()))
		for i := range ms.Len() {
			m := ms.At(i).Obj()
			if !m.Exported() {
				continue
			}
			key := "(*" + name + ")." + m.Name()
			if _, skip := notCarried[key]; skip {
				continue
			}
			om := oms.Lookup(ours, m.Name())
			if om == nil {
				t.Errorf("%s: missing from the drop-in", key)
				continue
			}
			us := typeString(m.Type(), qual)
			os := typeString(om.Obj().Type(), qual)
			if us != os {
				t.Errorf("%s: upstream %s, drop-in %s", key, us, os)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d identifiers compared: %s", checked, strings.Join(names, " "))
	}
	t.Logf("%d exported identifiers of upstream's pkg/adaptation compared", checked)
}
