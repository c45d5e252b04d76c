package validate_test

import (
	"errors"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

type verdictCase struct {
	name string
	cfg  validate.Config
	spec spec
	want string // "" accepts
}

func runVerdicts(t *testing.T, cases []verdictCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkVerdict(t, mustNew(t, tc.cfg).Validate(tc.spec.request()), tc.want)
		})
	}
}

func TestValidateOCIHooks(t *testing.T) {
	t.Parallel()
	on := validate.Config{RejectOCIHookAdjustment: true}
	runVerdicts(t, []verdictCase{
		{name: "knob off", spec: spec{adjust: true, hooks: ptr("10-a")}},
		{name: "no owner", cfg: on, spec: spec{adjust: true}},
		{name: "no adjustment", cfg: on, spec: spec{hooks: ptr("10-a")}},
		{name: "nil owners", cfg: on, spec: spec{adjust: true, noOwners: true}},
		{
			name: "one owner", cfg: on, spec: spec{adjust: true, hooks: ptr("10-a")},
			want: `validation error: plugin "10-a" attempted restricted OCI hook injection`,
		},
		{
			name: "accumulated owners", cfg: on, spec: spec{adjust: true, hooks: ptr("10-a,20-b")},
			want: `validation error: plugins "10-a,20-b" attempted restricted OCI hook injection`,
		},
	})
}

func TestValidateOCIHooksOtherContainer(t *testing.T) {
	t.Parallel()
	v := mustNew(t, validate.Config{RejectOCIHookAdjustment: true})
	req := spec{adjust: true, hooks: ptr("10-a")}.request()
	// Move the owners to another container: only the request container counts.
	req.Owners.Owners["other"] = req.Owners.Owners[ctrID]
	delete(req.Owners.Owners, ctrID)
	checkVerdict(t, v.Validate(req), "")
}

func TestValidateSeccompPolicy(t *testing.T) {
	t.Parallel()
	var (
		rtDefault   = ptr(nriv1beta1.SecurityProfile_PROFILE_TYPE_RUNTIME_DEFAULT)
		unconfined  = ptr(nriv1beta1.SecurityProfile_PROFILE_TYPE_UNCONFINED)
		localhost   = ptr(nriv1beta1.SecurityProfile_PROFILE_TYPE_LOCALHOST)
		unknown     = ptr(nriv1beta1.SecurityProfile_ProfileType(7))
		all         = validate.Config{RejectRuntimeDefaultSeccompAdjustment: true, RejectUnconfinedSeccompAdjustment: true, RejectCustomSeccompAdjustment: true}
		wantUnconf  = "validation error: plugin 10-a attempted restricted  unconfined seccomp policy adjustment"
		wantDefault = "validation error: plugin 10-a attempted restricted runtime default seccomp policy adjustment"
		wantCustom  = "validation error: plugin 10-a attempted restricted  custom seccomp policy adjustment"
	)
	runVerdicts(t, []verdictCase{
		{name: "no owner", cfg: all, spec: spec{adjust: true, profile: localhost}},
		{name: "no adjustment", cfg: all, spec: spec{seccomp: ptr("10-a"), profile: localhost}},
		{name: "all knobs off", spec: spec{adjust: true, seccomp: ptr("10-a")}},
		{name: "nil profile", cfg: all, spec: spec{adjust: true, seccomp: ptr("10-a")}, want: wantUnconf},
		{name: "unconfined", cfg: all, spec: spec{adjust: true, seccomp: ptr("10-a"), profile: unconfined}, want: wantUnconf},
		{name: "runtime default", cfg: all, spec: spec{adjust: true, seccomp: ptr("10-a"), profile: rtDefault}, want: wantDefault},
		{name: "localhost", cfg: all, spec: spec{adjust: true, seccomp: ptr("10-a"), profile: localhost}, want: wantCustom},
		{name: "unknown profile type", cfg: all, spec: spec{adjust: true, seccomp: ptr("10-a"), profile: unknown}},
		{
			name: "unconfined knob only, runtime default profile",
			cfg:  validate.Config{RejectUnconfinedSeccompAdjustment: true},
			spec: spec{adjust: true, seccomp: ptr("10-a"), profile: rtDefault},
		},
		{
			name: "runtime default knob only, nil profile",
			cfg:  validate.Config{RejectRuntimeDefaultSeccompAdjustment: true},
			spec: spec{adjust: true, seccomp: ptr("10-a")},
		},
		{
			name: "custom knob only, unconfined profile",
			cfg:  validate.Config{RejectCustomSeccompAdjustment: true},
			spec: spec{adjust: true, seccomp: ptr("10-a"), profile: unconfined},
		},
		{
			name: "removal marker counts",
			cfg:  validate.Config{RejectCustomSeccompAdjustment: true},
			spec: spec{adjust: true, seccomp: ptr("-10-a"), profile: localhost},
			want: "validation error: plugin -10-a attempted restricted  custom seccomp policy adjustment",
		},
	})
}

func TestValidateNamespaces(t *testing.T) {
	t.Parallel()
	on := validate.Config{RejectNamespaceAdjustment: true}
	runVerdicts(t, []verdictCase{
		{name: "knob off", spec: spec{adjust: true, namespaces: map[string]string{"network": "10-a"}}},
		{name: "no owner", cfg: on, spec: spec{adjust: true}},
		{name: "no adjustment", cfg: on, spec: spec{namespaces: map[string]string{"network": "10-a"}}},
		{
			name: "one owner", cfg: on, spec: spec{adjust: true, namespaces: map[string]string{"network": "10-a"}},
			want: `validation error: attempted restricted namespace adjustment by plugin(s) "10-a" (namespace "network")`,
		},
		{
			name: "removal", cfg: on, spec: spec{adjust: true, namespaces: map[string]string{"ipc": "-10-a"}},
			want: `validation error: attempted restricted namespace adjustment by plugin(s) "-10-a" (namespace "ipc")`,
		},
		{
			name: "several owners, sorted by namespace", cfg: on,
			spec: spec{adjust: true, namespaces: map[string]string{"pid": "20-b", "network": "10-a", "ipc": "30-c"}},
			want: `validation error: attempted restricted namespace adjustment by plugin(s) "30-c" (namespace "ipc"), "10-a" (namespace "network"), "20-b" (namespace "pid")`,
		},
		{
			// Classic parity: the field's entry counts even when it is empty.
			name: "empty entry", cfg: on, spec: spec{adjust: true, namespaces: map[string]string{}},
			want: `validation error: attempted restricted namespace adjustment by plugin(s) `,
		},
	})
}

func TestValidateSysctl(t *testing.T) {
	t.Parallel()
	on := validate.Config{RejectSysctlAdjustment: true}
	runVerdicts(t, []verdictCase{
		{name: "knob off", spec: spec{sysctl: map[string]string{"net.a": "1"}, sysctlOwners: map[string]string{"net.a": "10-a"}}},
		{name: "no linux adjustment", cfg: on, spec: spec{adjust: true, sysctlOwners: map[string]string{"net.a": "10-a"}}},
		{name: "unowned key", cfg: on, spec: spec{sysctl: map[string]string{"net.a": "1"}}},
		{
			name: "pure removal", cfg: on,
			spec: spec{sysctl: map[string]string{"-net.a": ""}, sysctlOwners: map[string]string{"net.a": "-10-a"}},
		},
		{
			name: "owned key", cfg: on,
			spec: spec{sysctl: map[string]string{"net.a": "1"}, sysctlOwners: map[string]string{"net.a": "10-a"}},
			want: "validation error: attempted restricted sysctl adjustment by plugin(s) 10-a",
		},
		{
			name: "several owned keys, sorted by key", cfg: on,
			spec: spec{
				sysctl:       map[string]string{"net.c": "1", "net.a": "1", "net.b": "1", "net.d": "1"},
				sysctlOwners: map[string]string{"net.c": "30-c", "net.a": "10-a", "net.b": "20-b"},
			},
			want: "validation error: attempted restricted sysctl adjustment by plugin(s) 10-a, 20-b, 30-c",
		},
		{
			name: "owner of a key not in the adjustment", cfg: on,
			spec: spec{sysctl: map[string]string{"net.a": "1"}, sysctlOwners: map[string]string{"net.b": "10-a"}},
		},
	})
}

func TestValidateRequiredPlugins(t *testing.T) {
	t.Parallel()
	const tol = validate.DefaultTolerateMissingPluginsAnnotation
	runVerdicts(t, []verdictCase{
		{name: "nothing required", spec: spec{}},
		{name: "operator, present by name", cfg: validate.Config{RequiredPlugins: []string{"foo"}}, spec: spec{plugins: []string{"10-foo"}}},
		{name: "operator, present by full name", cfg: validate.Config{RequiredPlugins: []string{"10-foo"}}, spec: spec{plugins: []string{"10-foo"}}},
		{
			name: "operator, full name with other index", cfg: validate.Config{RequiredPlugins: []string{"10-foo"}},
			spec: spec{plugins: []string{"20-foo"}},
			want: `validation error: required plugin "10-foo" not present`,
		},
		{
			name: "operator, missing", cfg: validate.Config{RequiredPlugins: []string{"foo"}},
			want: `validation error: required plugin "foo" not present`,
		},
		{
			name: "operator and annotation, both missing",
			cfg:  validate.Config{RequiredPlugins: []string{"foo", "bar"}},
			spec: spec{annotations: map[string]string{validate.RequiredPluginsAnnotation: `["baz"]`}},
			want: `validation error: required plugins "foo,bar,baz" not present`,
		},
		{
			name: "annotation, container scope wins over pod scope",
			spec: spec{
				plugins: []string{"10-foo"},
				annotations: map[string]string{
					validate.RequiredPluginsAnnotation + "/container." + ctrName: "[foo]",
					validate.RequiredPluginsAnnotation + "/pod":                  "[bar]",
				},
			},
		},
		{
			name: "annotation, block list",
			spec: spec{annotations: map[string]string{validate.RequiredPluginsAnnotation: "- foo\n- 20-bar\n"}},
			want: `validation error: required plugins "foo,20-bar" not present`,
		},
		{
			name: "annotation, another container's scope is ignored",
			spec: spec{annotations: map[string]string{validate.RequiredPluginsAnnotation + "/container.other": "[foo]"}},
		},
		{
			name: "annotation, not a list",
			spec: spec{annotations: map[string]string{validate.RequiredPluginsAnnotation: "foo"}},
			want: "invalid required-plugins.noderesource.dev annotation \"foo\": yaml: unmarshal errors:\n  line 1: cannot unmarshal !!str `foo` into []string",
		},
		{
			name: "annotation waived by toleration",
			cfg:  validate.Config{TolerateMissingPluginsAnnotation: tol},
			spec: spec{annotations: map[string]string{validate.RequiredPluginsAnnotation: "[foo]", tol + "/pod": "true"}},
		},
		{
			name: "invalid annotation waived by toleration",
			cfg:  validate.Config{TolerateMissingPluginsAnnotation: tol},
			spec: spec{annotations: map[string]string{validate.RequiredPluginsAnnotation: "foo", tol: "true"}},
		},
		{
			name: "toleration false",
			cfg:  validate.Config{TolerateMissingPluginsAnnotation: tol},
			spec: spec{annotations: map[string]string{validate.RequiredPluginsAnnotation: "[foo]", tol: "false"}},
			want: `validation error: required plugin "foo" not present`,
		},
		{
			name: "toleration not a bool",
			cfg:  validate.Config{TolerateMissingPluginsAnnotation: tol},
			spec: spec{annotations: map[string]string{tol: "maybe"}},
			want: `invalid tolerate-missing-plugins.noderesource.dev annotation "maybe": strconv.ParseBool: parsing "maybe": invalid syntax`,
		},
		{
			name: "toleration annotation ignored without a configured key",
			spec: spec{annotations: map[string]string{validate.RequiredPluginsAnnotation: "[foo]", tol: "true"}},
			want: `validation error: required plugin "foo" not present`,
		},
	})
}

func TestValidateCheckOrder(t *testing.T) {
	t.Parallel()
	all := validate.Config{
		RejectOCIHookAdjustment:           true,
		RejectUnconfinedSeccompAdjustment: true,
		RejectNamespaceAdjustment:         true,
		RejectSysctlAdjustment:            true,
		RequiredPlugins:                   []string{"foo"},
	}
	full := spec{
		hooks:        ptr("10-a"),
		seccomp:      ptr("10-a"),
		namespaces:   map[string]string{"network": "10-a"},
		sysctl:       map[string]string{"net.a": "1"},
		sysctlOwners: map[string]string{"net.a": "10-a"},
	}
	steps := []string{
		`validation error: plugin "10-a" attempted restricted OCI hook injection`,
		"validation error: plugin 10-a attempted restricted  unconfined seccomp policy adjustment",
		`validation error: attempted restricted namespace adjustment by plugin(s) "10-a" (namespace "network")`,
		`validation error: required plugin "foo" not present`,
		"validation error: attempted restricted sysctl adjustment by plugin(s) 10-a",
		"",
	}
	// Remove the offender of each check in turn: the next check reports.
	s := full
	for i, want := range steps {
		checkVerdict(t, mustNew(t, all).Validate(s.request()), want)
		switch i {
		case 0:
			s.hooks = nil
		case 1:
			s.seccomp = nil
		case 2:
			s.namespaces = nil
		case 3:
			s.plugins = []string{"00-foo"}
		case 4:
			s.sysctlOwners = nil
		}
	}
}

func TestValidateMissingPartsDoNotPanic(t *testing.T) {
	t.Parallel()
	v := mustNew(t, validate.Config{
		RejectOCIHookAdjustment:               true,
		RejectRuntimeDefaultSeccompAdjustment: true,
		RejectUnconfinedSeccompAdjustment:     true,
		RejectCustomSeccompAdjustment:         true,
		RejectNamespaceAdjustment:             true,
		RejectSysctlAdjustment:                true,
		TolerateMissingPluginsAnnotation:      validate.DefaultTolerateMissingPluginsAnnotation,
	})
	for name, req := range map[string]*nriv1beta1.ValidateContainerAdjustmentRequest{
		"nil request":       nil,
		"empty request":     {},
		"adjust only":       {Adjust: &nriv1beta1.ContainerAdjustment{Linux: &nriv1beta1.LinuxContainerAdjustment{Sysctl: map[string]string{"a": "b"}}}},
		"nil field owners":  {Adjust: &nriv1beta1.ContainerAdjustment{}, Owners: &nriv1beta1.OwningPlugins{Owners: map[string]*nriv1beta1.FieldOwners{"": nil}}},
		"nil plugin in set": {Plugins: []*nriv1beta1.PluginInstance{nil}},
	} {
		if err := v.Validate(req); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMissingPluginsError(t *testing.T) {
	t.Parallel()
	v := mustNew(t, validate.Config{RequiredPlugins: []string{"foo", "10-bar"}})
	err := v.Validate(spec{plugins: []string{"20-bar"}}.request())
	var mpe *validate.MissingPluginsError
	if !errors.As(err, &mpe) {
		t.Fatalf("got %v (%T), want a *MissingPluginsError", err, err)
	}
	if got := mpe.Missing; len(got) != 2 || got[0] != "foo" || got[1] != "10-bar" {
		t.Fatalf("Missing = %q, want [foo 10-bar]", got)
	}
}

func TestEnabled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  validate.Config
		want bool
	}{
		{"zero", validate.Config{}, false},
		{"toleration key only", validate.Config{TolerateMissingPluginsAnnotation: "x"}, false},
		{"empty required list", validate.Config{RequiredPlugins: []string{}}, false},
		{"hooks", validate.Config{RejectOCIHookAdjustment: true}, true},
		{"runtime default seccomp", validate.Config{RejectRuntimeDefaultSeccompAdjustment: true}, true},
		{"unconfined seccomp", validate.Config{RejectUnconfinedSeccompAdjustment: true}, true},
		{"custom seccomp", validate.Config{RejectCustomSeccompAdjustment: true}, true},
		{"namespaces", validate.Config{RejectNamespaceAdjustment: true}, true},
		{"sysctl", validate.Config{RejectSysctlAdjustment: true}, true},
		{"required plugins", validate.Config{RequiredPlugins: []string{"foo"}}, true},
	} {
		if got := mustNew(t, tc.cfg).Enabled(); got != tc.want {
			t.Errorf("%s: Enabled() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  validate.Config
		want string // "" accepts
	}{
		{name: "names and full names", cfg: validate.Config{RequiredPlugins: []string{"foo", "10-foo", "a_b.c+d-e", "1-x", "100-x"}}},
		{name: "toleration key", cfg: validate.Config{TolerateMissingPluginsAnnotation: "example.com/tolerate-missing"}},
		{
			name: "empty name", cfg: validate.Config{RequiredPlugins: []string{"foo", ""}},
			want: "required_plugins[1]: invalid plugin name: name is empty",
		},
		{
			name: "bad character", cfg: validate.Config{RequiredPlugins: []string{"fo o"}},
			want: `required_plugins[0]: invalid plugin name "fo o": contains invalid character ' '`,
		},
		{
			name: "slash", cfg: validate.Config{RequiredPlugins: []string{"x/y"}},
			want: `required_plugins[0]: invalid plugin name "x/y": contains invalid character '/'`,
		},
		{
			name: "index without name", cfg: validate.Config{RequiredPlugins: []string{"10-"}},
			want: `required_plugins[0]: invalid plugin name "10-": index "10" without a name`,
		},
		{
			name: "duplicate", cfg: validate.Config{RequiredPlugins: []string{"foo", "bar", "foo"}},
			want: `required_plugins[2]: plugin "foo" is already listed at required_plugins[0]`,
		},
		{
			name: "toleration key with blank", cfg: validate.Config{TolerateMissingPluginsAnnotation: "a b"},
			want: `tolerate_missing_plugins_annotation: invalid annotation key "a b": contains invalid character ' '`,
		},
		{
			name: "toleration key is the required-plugins key",
			cfg:  validate.Config{TolerateMissingPluginsAnnotation: validate.RequiredPluginsAnnotation},
			want: `tolerate_missing_plugins_annotation: "required-plugins.noderesource.dev" is the required-plugins annotation key`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := validate.New(tc.cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.want == "" && v == nil:
				t.Fatal("New returned nil without an error")
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("New error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestNewCopiesConfig(t *testing.T) {
	t.Parallel()
	cfg := validate.Config{RequiredPlugins: []string{"foo"}}
	v := mustNew(t, cfg)
	cfg.RequiredPlugins[0] = "bar"
	op, _, err := v.Required(nil, nil)
	if err != nil || len(op) != 1 || op[0] != "foo" {
		t.Fatalf("Required = %q, %v; want [foo]", op, err)
	}
	op[0] = "baz"
	if op, _, _ := v.Required(nil, nil); op[0] != "foo" {
		t.Fatalf("Required returned the validator's own slice")
	}
}
