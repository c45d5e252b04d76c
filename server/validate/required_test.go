package validate_test

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

// TestTolerateAnnotationNeverOverridesOperatorRequired covers the deliberate
// change from classic NRI (DESIGN §5.3): the tolerate-missing-plugins
// annotation waives plugins required by the required-plugins annotation, never
// the operator's required_plugins. Classic NRI skipped the whole check.
func TestTolerateAnnotationNeverOverridesOperatorRequired(t *testing.T) {
	t.Parallel()
	const tol = validate.DefaultTolerateMissingPluginsAnnotation
	v := mustNew(t, validate.Config{
		RequiredPlugins:                  []string{"foo"},
		TolerateMissingPluginsAnnotation: tol,
	})
	tolerated := map[string]string{
		tol + "/container." + ctrName:      "true",
		validate.RequiredPluginsAnnotation: "[bar]",
	}

	// foo (operator) missing: rejected despite the toleration.
	checkVerdict(t, v.Validate(spec{annotations: tolerated}.request()),
		`validation error: required plugin "foo" not present`)
	checkVerdict(t, v.Validate(spec{annotations: tolerated, plugins: []string{"20-bar"}}.request()),
		`validation error: required plugin "foo" not present`)

	// foo present, bar (annotation) missing: the toleration waives bar.
	checkVerdict(t, v.Validate(spec{annotations: tolerated, plugins: []string{"10-foo"}}.request()), "")

	// Without the toleration bar is required.
	checkVerdict(t, v.Validate(spec{
		annotations: map[string]string{validate.RequiredPluginsAnnotation: "[bar]"},
		plugins:     []string{"10-foo"},
	}.request()), `validation error: required plugin "bar" not present`)

	// Required reports the split.
	op, ann, err := v.Required(spec{annotations: tolerated}.request().GetPod(), &nriv1beta1.Container{Name: ctrName})
	if err != nil || !slices.Equal(op, []string{"foo"}) || ann != nil {
		t.Fatalf("Required = %q, %q, %v; want [foo], nil, nil", op, ann, err)
	}
}

func TestRequired(t *testing.T) {
	t.Parallel()
	const (
		tol = "tolerate"
		req = validate.RequiredPluginsAnnotation
	)
	for _, tc := range []struct {
		name          string
		cfg           validate.Config
		annotations   map[string]string
		ctr           string
		wantOperator  []string
		wantAnnotated []string
		wantErr       string
	}{
		{name: "nothing"},
		{name: "operator only", cfg: validate.Config{RequiredPlugins: []string{"foo", "10-bar"}}, wantOperator: []string{"foo", "10-bar"}},
		{name: "bare key, JSON", annotations: map[string]string{req: `["a", "10-b"]`}, wantAnnotated: []string{"a", "10-b"}},
		{name: "pod key, YAML flow", annotations: map[string]string{req + "/pod": `[ a, b ]`}, wantAnnotated: []string{"a", "b"}},
		{name: "container key, YAML block", ctr: "c", annotations: map[string]string{req + "/container.c": "- a\n- b"}, wantAnnotated: []string{"a", "b"}},
		{
			name: "container key wins", ctr: "c",
			annotations:   map[string]string{req + "/container.c": "[c]", req + "/pod": "[p]", req: "[k]"},
			wantAnnotated: []string{"c"},
		},
		{name: "pod key wins over bare key", annotations: map[string]string{req + "/pod": "[p]", req: "[k]"}, wantAnnotated: []string{"p"}},
		{name: "other container", ctr: "c", annotations: map[string]string{req + "/container.d": "[d]"}},
		{name: "empty value", annotations: map[string]string{req: ""}},
		{name: "empty list", annotations: map[string]string{req: "[]"}, wantAnnotated: []string{}},
		{name: "numbers become names", annotations: map[string]string{req: "[10, 2.5]"}, wantAnnotated: []string{"10", "2.5"}},
		{
			name: "scalar", annotations: map[string]string{req: "a"},
			wantErr: "invalid required-plugins.noderesource.dev annotation \"a\": yaml: unmarshal errors:\n  line 1: cannot unmarshal !!str `a` into []string",
		},
		{
			name: "map", annotations: map[string]string{req: "{a: b}"},
			wantErr: "invalid required-plugins.noderesource.dev annotation \"{a: b}\": yaml: unmarshal errors:\n  line 1: cannot unmarshal !!map into []string",
		},
		{
			name: "operator kept on error", cfg: validate.Config{RequiredPlugins: []string{"foo"}},
			annotations:  map[string]string{req: "[a"},
			wantOperator: []string{"foo"},
			wantErr:      "invalid required-plugins.noderesource.dev annotation \"[a\": yaml: line 1: did not find expected ',' or ']'",
		},
		{
			name: "tolerated", cfg: validate.Config{RequiredPlugins: []string{"foo"}, TolerateMissingPluginsAnnotation: tol},
			annotations:  map[string]string{req: "[a]", tol: "true"},
			wantOperator: []string{"foo"},
		},
		{
			name: "tolerated, 1", cfg: validate.Config{TolerateMissingPluginsAnnotation: tol},
			annotations: map[string]string{req: "[a]", tol + "/pod": "1"},
		},
		{
			name: "toleration scoped to this container", ctr: "c", cfg: validate.Config{TolerateMissingPluginsAnnotation: tol},
			annotations: map[string]string{req: "[a]", tol + "/container.c": "true", tol: "false"},
		},
		{
			name: "toleration scoped to another container", ctr: "c", cfg: validate.Config{TolerateMissingPluginsAnnotation: tol},
			annotations:   map[string]string{req: "[a]", tol + "/container.d": "true"},
			wantAnnotated: []string{"a"},
		},
		{
			name: "not tolerated", cfg: validate.Config{TolerateMissingPluginsAnnotation: tol},
			annotations:   map[string]string{req: "[a]", tol: "False"},
			wantAnnotated: []string{"a"},
		},
		{
			name: "toleration not a bool", cfg: validate.Config{TolerateMissingPluginsAnnotation: tol},
			annotations: map[string]string{tol: "yes"},
			wantErr:     `invalid tolerate annotation "yes": strconv.ParseBool: parsing "yes": invalid syntax`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := mustNew(t, tc.cfg)
			op, ann, err := v.Required(&nriv1beta1.PodSandbox{Annotations: tc.annotations}, &nriv1beta1.Container{Name: tc.ctr})
			if !slices.Equal(op, tc.wantOperator) {
				t.Errorf("operator = %q, want %q", op, tc.wantOperator)
			}
			if !slices.Equal(ann, tc.wantAnnotated) || (ann == nil) != (tc.wantAnnotated == nil) {
				t.Errorf("annotated = %#v, want %#v", ann, tc.wantAnnotated)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("err = %v", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			case err != nil && !errors.Is(err, validate.ErrValidation):
				t.Errorf("err %v does not wrap ErrValidation", err)
			}
		})
	}
}

func TestRequiredAnnotationErrorsWrapCause(t *testing.T) {
	t.Parallel()
	v := mustNew(t, validate.Config{TolerateMissingPluginsAnnotation: "t"})
	_, _, err := v.Required(&nriv1beta1.PodSandbox{Annotations: map[string]string{"t": "x"}}, nil)
	if !errors.Is(err, strconv.ErrSyntax) || !errors.Is(err, validate.ErrValidation) {
		t.Fatalf("err = %v, want it to wrap both ErrValidation and strconv.ErrSyntax", err)
	}
}

func TestMissingRequired(t *testing.T) {
	t.Parallel()
	registered := instances("10-foo", "20-bar", "20-dup", "30-dup")
	for _, tc := range []struct {
		name     string
		required []string
		want     []string
	}{
		{name: "nothing required"},
		{name: "by name", required: []string{"foo", "bar", "dup"}},
		{name: "by full name", required: []string{"10-foo", "20-bar", "20-dup", "30-dup"}},
		{name: "wrong index", required: []string{"20-foo"}, want: []string{"20-foo"}},
		{name: "absent, order kept", required: []string{"z", "foo", "a", "z"}, want: []string{"z", "a", "z"}},
		{name: "index alone is not a name", required: []string{"10"}, want: []string{"10"}},
	} {
		if got := validate.MissingRequired(tc.required, registered); !slices.Equal(got, tc.want) {
			t.Errorf("%s: MissingRequired = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := validate.MissingRequired([]string{"foo"}, nil); !slices.Equal(got, []string{"foo"}) {
		t.Errorf("nothing registered: MissingRequired = %q", got)
	}
	if got := validate.MissingRequired([]string{"foo", "-foo"}, []*nriv1beta1.PluginInstance{nil, {Name: "foo"}}); !slices.Equal(got, []string(nil)) {
		t.Errorf("index-less instance: MissingRequired = %q", got)
	}
}
