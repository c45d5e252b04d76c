package validate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
	"github.com/containerd/nri/pkg/plugin"
	classic "github.com/containerd/nri/plugins/default-validator"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

// TestMain silences classic NRI's logging: its validator logs every
// rejection through a global logger, which is set once, before any test runs.
func TestMain(m *testing.M) {
	nrilog.Set(quietLogger{})
	os.Exit(m.Run())
}

type quietLogger struct{}

func (quietLogger) Debugf(context.Context, string, ...any) {}
func (quietLogger) Infof(context.Context, string, ...any)  {}
func (quietLogger) Warnf(context.Context, string, ...any)  {}
func (quietLogger) Errorf(context.Context, string, ...any) {}

// toClassic converts a v1beta1 message to its v1alpha1 twin through the wire.
func toClassic[M proto.Message](t *testing.T, from proto.Message, to M) M {
	t.Helper()
	b, err := proto.Marshal(from)
	if err != nil {
		t.Fatalf("marshal %T: %v", from, err)
	}
	if err := proto.Unmarshal(b, to); err != nil {
		t.Fatalf("unmarshal %T: %v", to, err)
	}
	return to
}

func classicConfig(cfg validate.Config) *classic.DefaultValidatorConfig {
	return &classic.DefaultValidatorConfig{
		Enable:                                true,
		RejectOCIHookAdjustment:               cfg.RejectOCIHookAdjustment,
		RejectRuntimeDefaultSeccompAdjustment: cfg.RejectRuntimeDefaultSeccompAdjustment,
		RejectUnconfinedSeccompAdjustment:     cfg.RejectUnconfinedSeccompAdjustment,
		RejectCustomSeccompAdjustment:         cfg.RejectCustomSeccompAdjustment,
		RejectNamespaceAdjustment:             cfg.RejectNamespaceAdjustment,
		RejectSysctlAdjustment:                cfg.RejectSysctlAdjustment,
		RequiredPlugins:                       cfg.RequiredPlugins,
		TolerateMissingAnnotation:             cfg.TolerateMissingPluginsAnnotation,
	}
}

// normalize makes a rejection text order-insensitive where classic lists
// offenders in Go map order (namespaces, sysctls): the offenders after
// "plugin(s) " are sorted.
func normalize(msg string) string {
	head, list, ok := strings.Cut(msg, "plugin(s) ")
	if !ok {
		return msg
	}
	parts := strings.Split(list, ", ")
	slices.Sort(parts)
	return head + "plugin(s) " + strings.Join(parts, ", ")
}

type diffCase struct {
	name string
	cfg  validate.Config
	spec spec
}

// compare runs classic's default validator and ours on the same request and
// asserts the same decision and the same text, except for the deliberate
// change, which it asserts explicitly. It returns true if this case was the
// deliberate change.
func compare(t *testing.T, tc diffCase) (deliberate bool) {
	t.Helper()
	req := tc.spec.request()
	ours := mustNew(t, tc.cfg).Validate(req)
	theirs := classic.NewDefaultValidator(classicConfig(tc.cfg)).
		ValidateContainerAdjustment(context.Background(), toClassic(t, req, &api.ValidateContainerAdjustmentRequest{}))

	// The deliberate change: classic's toleration waived the operator's
	// required plugins too. Ours then reports exactly the operator's missing
	// plugins.
	if theirs == nil && ours != nil && tolerated(t, tc.cfg, req) {
		wantMissing := validate.MissingRequired(tc.cfg.RequiredPlugins, req.GetPlugins())
		var mpe *validate.MissingPluginsError
		if len(wantMissing) == 0 || !errors.As(ours, &mpe) || !slices.Equal(mpe.Missing, wantMissing) {
			t.Fatalf("%s: classic accepts (tolerated), ours rejects with %v; want missing operator plugins %q", tc.name, ours, wantMissing)
		}
		return true
	}

	switch {
	case ours == nil && theirs == nil:
	case ours == nil:
		t.Fatalf("%s: classic rejects (%v), ours accepts", tc.name, theirs)
	case theirs == nil:
		t.Fatalf("%s: classic accepts, ours rejects (%v)", tc.name, ours)
	case normalize(ours.Error()) != normalize(theirs.Error()):
		t.Fatalf("%s: rejection text differs\n   ours: %q\nclassic: %q", tc.name, ours, theirs)
	case !errors.Is(ours, validate.ErrValidation):
		t.Fatalf("%s: %v does not wrap ErrValidation", tc.name, ours)
	}
	return false
}

// tolerated reports, using classic's own annotation lookup, whether the
// request's pod tolerates missing plugins for its container.
func tolerated(t *testing.T, cfg validate.Config, req *nriv1beta1.ValidateContainerAdjustmentRequest) bool {
	t.Helper()
	if cfg.TolerateMissingPluginsAnnotation == "" {
		return false
	}
	pod := toClassic(t, req.GetPod(), &api.PodSandbox{})
	value, ok := plugin.GetEffectiveAnnotation(pod, cfg.TolerateMissingPluginsAnnotation, req.GetContainer().GetName())
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(value)
	return err == nil && b
}

// TestDifferentialAgainstClassic runs a table of requests through classic
// NRI's default validator (v0.12.5) and ours.
func TestDifferentialAgainstClassic(t *testing.T) {
	t.Parallel()
	var (
		rtDefault  = ptr(nriv1beta1.SecurityProfile_PROFILE_TYPE_RUNTIME_DEFAULT)
		unconfined = ptr(nriv1beta1.SecurityProfile_PROFILE_TYPE_UNCONFINED)
		localhost  = ptr(nriv1beta1.SecurityProfile_PROFILE_TYPE_LOCALHOST)
		req        = validate.RequiredPluginsAnnotation
		tol        = validate.DefaultTolerateMissingPluginsAnnotation
		hooksOn    = validate.Config{RejectOCIHookAdjustment: true}
		nsOn       = validate.Config{RejectNamespaceAdjustment: true}
		sysctlOn   = validate.Config{RejectSysctlAdjustment: true}
	)
	cases := []diffCase{
		// OCI hooks.
		{name: "hooks/unowned", cfg: hooksOn, spec: spec{adjust: true}},
		{name: "hooks/owned, knob off", spec: spec{adjust: true, hooks: ptr("10-a")}},
		{name: "hooks/owned", cfg: hooksOn, spec: spec{adjust: true, hooks: ptr("10-a")}},
		{name: "hooks/owned by two", cfg: hooksOn, spec: spec{adjust: true, hooks: ptr("10-a,20-b")}},
		{name: "hooks/owned, empty owner", cfg: hooksOn, spec: spec{adjust: true, hooks: ptr("")}},
		{name: "hooks/owned, no adjustment", cfg: hooksOn, spec: spec{hooks: ptr("10-a")}},

		// Namespaces.
		{name: "ns/unowned", cfg: nsOn, spec: spec{adjust: true}},
		{name: "ns/owned, knob off", spec: spec{adjust: true, namespaces: map[string]string{"network": "10-a"}}},
		{name: "ns/owned", cfg: nsOn, spec: spec{adjust: true, namespaces: map[string]string{"network": "10-a"}}},
		{name: "ns/removed", cfg: nsOn, spec: spec{adjust: true, namespaces: map[string]string{"network": "-10-a"}}},
		{name: "ns/owned by several", cfg: nsOn, spec: spec{adjust: true, namespaces: map[string]string{"network": "10-a", "pid": "20-b", "ipc": "10-a"}}},
		{name: "ns/empty entry", cfg: nsOn, spec: spec{adjust: true, namespaces: map[string]string{}}},
		{name: "ns/owned, no adjustment", cfg: nsOn, spec: spec{namespaces: map[string]string{"network": "10-a"}}},

		// Sysctl.
		{name: "sysctl/unowned", cfg: sysctlOn, spec: spec{sysctl: map[string]string{"net.a": "1"}}},
		{name: "sysctl/owned, knob off", spec: spec{sysctl: map[string]string{"net.a": "1"}, sysctlOwners: map[string]string{"net.a": "10-a"}}},
		{name: "sysctl/owned", cfg: sysctlOn, spec: spec{sysctl: map[string]string{"net.a": "1"}, sysctlOwners: map[string]string{"net.a": "10-a"}}},
		{name: "sysctl/several owned", cfg: sysctlOn, spec: spec{
			sysctl:       map[string]string{"net.a": "1", "net.b": "2", "net.c": "3"},
			sysctlOwners: map[string]string{"net.a": "10-a", "net.b": "20-b"},
		}},
		{name: "sysctl/pure removal", cfg: sysctlOn, spec: spec{sysctl: map[string]string{"-net.a": ""}, sysctlOwners: map[string]string{"net.a": "-10-a"}}},
		{name: "sysctl/owners without linux adjustment", cfg: sysctlOn, spec: spec{adjust: true, sysctlOwners: map[string]string{"net.a": "10-a"}}},
		{name: "sysctl/empty map", cfg: sysctlOn, spec: spec{sysctl: map[string]string{}, sysctlOwners: map[string]string{"net.a": "10-a"}}},

		// Required plugins, with the annotation forms.
		{name: "req/operator present by name", cfg: validate.Config{RequiredPlugins: []string{"foo"}}, spec: spec{plugins: []string{"10-foo"}}},
		{name: "req/operator present by full name", cfg: validate.Config{RequiredPlugins: []string{"10-foo"}}, spec: spec{plugins: []string{"10-foo"}}},
		{name: "req/operator wrong index", cfg: validate.Config{RequiredPlugins: []string{"10-foo"}}, spec: spec{plugins: []string{"20-foo"}}},
		{name: "req/operator missing", cfg: validate.Config{RequiredPlugins: []string{"foo"}}},
		{name: "req/operator two missing", cfg: validate.Config{RequiredPlugins: []string{"foo", "bar"}}},
		{name: "req/annotation bare", spec: spec{annotations: map[string]string{req: "[ foo ]"}}},
		{name: "req/annotation pod", spec: spec{annotations: map[string]string{req + "/pod": `["foo", "bar"]`}}},
		{name: "req/annotation container", spec: spec{annotations: map[string]string{req + "/container." + ctrName: "- foo\n- 20-bar"}, plugins: []string{"20-bar"}}},
		{name: "req/annotation other container", spec: spec{annotations: map[string]string{req + "/container.other": "[foo]"}}},
		{name: "req/annotation container beats pod", spec: spec{
			annotations: map[string]string{req + "/container." + ctrName: "[foo]", req + "/pod": "[bar]"},
			plugins:     []string{"10-foo"},
		}},
		{name: "req/annotation pod beats bare", spec: spec{
			annotations: map[string]string{req + "/pod": "[foo]", req: "[bar]"},
			plugins:     []string{"10-foo"},
		}},
		{name: "req/annotation scalar", spec: spec{annotations: map[string]string{req: "foo"}}},
		{name: "req/annotation broken flow", spec: spec{annotations: map[string]string{req: "[foo"}}},
		{name: "req/annotation empty", spec: spec{annotations: map[string]string{req: ""}}},
		{name: "req/operator and annotation", cfg: validate.Config{RequiredPlugins: []string{"foo"}}, spec: spec{annotations: map[string]string{req: "[bar]"}}},
		{name: "req/duplicate", cfg: validate.Config{RequiredPlugins: []string{"foo"}}, spec: spec{annotations: map[string]string{req: "[foo]"}}},

		// Toleration.
		{name: "tol/waives annotation", cfg: validate.Config{TolerateMissingPluginsAnnotation: tol}, spec: spec{annotations: map[string]string{req: "[foo]", tol: "true"}}},
		{name: "tol/waives broken annotation", cfg: validate.Config{TolerateMissingPluginsAnnotation: tol}, spec: spec{annotations: map[string]string{req: "foo", tol + "/pod": "true"}}},
		{name: "tol/false", cfg: validate.Config{TolerateMissingPluginsAnnotation: tol}, spec: spec{annotations: map[string]string{req: "[foo]", tol: "false"}}},
		{name: "tol/not a bool", cfg: validate.Config{TolerateMissingPluginsAnnotation: tol}, spec: spec{annotations: map[string]string{tol: "maybe"}}},
		{name: "tol/other container", cfg: validate.Config{TolerateMissingPluginsAnnotation: tol}, spec: spec{annotations: map[string]string{req: "[foo]", tol + "/container.other": "true"}}},
		{name: "tol/key not configured", spec: spec{annotations: map[string]string{req: "[foo]", tol: "true"}}},
		{name: "tol/operator missing (deliberate change)", cfg: validate.Config{RequiredPlugins: []string{"foo"}, TolerateMissingPluginsAnnotation: tol}, spec: spec{annotations: map[string]string{tol: "true"}}},
		{name: "tol/operator present", cfg: validate.Config{RequiredPlugins: []string{"foo"}, TolerateMissingPluginsAnnotation: tol}, spec: spec{annotations: map[string]string{tol: "true"}, plugins: []string{"10-foo"}}},

		// Check order: the first failing check reports.
		{name: "order/all", cfg: validate.Config{
			RejectOCIHookAdjustment: true, RejectUnconfinedSeccompAdjustment: true, RejectNamespaceAdjustment: true,
			RejectSysctlAdjustment: true, RequiredPlugins: []string{"foo"},
		}, spec: spec{
			hooks: ptr("10-a"), seccomp: ptr("10-a"), namespaces: map[string]string{"network": "10-a"},
			sysctl: map[string]string{"net.a": "1"}, sysctlOwners: map[string]string{"net.a": "10-a"},
		}},
		{name: "order/required before sysctl", cfg: validate.Config{RejectSysctlAdjustment: true, RequiredPlugins: []string{"foo"}}, spec: spec{
			sysctl: map[string]string{"net.a": "1"}, sysctlOwners: map[string]string{"net.a": "10-a"},
		}},
	}

	// Seccomp: every profile type, owned or not, under every knob combination.
	profiles := map[string]*nriv1beta1.SecurityProfile_ProfileType{
		"nil": nil, "runtime-default": rtDefault, "unconfined": unconfined, "localhost": localhost,
		"unknown": ptr(nriv1beta1.SecurityProfile_ProfileType(7)),
	}
	for pname, profile := range profiles {
		for knobs := range 8 {
			cfg := validate.Config{
				RejectRuntimeDefaultSeccompAdjustment: knobs&1 != 0,
				RejectUnconfinedSeccompAdjustment:     knobs&2 != 0,
				RejectCustomSeccompAdjustment:         knobs&4 != 0,
			}
			for _, owner := range []*string{nil, ptr("10-a")} {
				cases = append(cases, diffCase{
					name: fmt.Sprintf("seccomp/%s/knobs=%03b/owned=%v", pname, knobs, owner != nil),
					cfg:  cfg,
					spec: spec{adjust: true, seccomp: owner, profile: profile},
				})
			}
		}
	}

	deliberate := 0
	for _, tc := range cases {
		if compare(t, tc) {
			deliberate++
		}
	}
	if deliberate != 1 {
		t.Fatalf("the deliberate change showed up %d times, want once", deliberate)
	}
}

// TestDifferentialRequiredPlugins crosses operator lists, registered plugins,
// required-plugins annotations and tolerations. Classic and ours must agree,
// except where the toleration met a missing operator-required plugin: the
// deliberate change.
func TestDifferentialRequiredPlugins(t *testing.T) {
	t.Parallel()
	const (
		req = validate.RequiredPluginsAnnotation
		tol = "tolerate-missing-plugins"
	)
	operators := [][]string{nil, {"foo"}, {"10-foo"}, {"foo", "bar"}}
	registered := [][]string{nil, {"10-foo"}, {"10-foo", "20-bar"}, {"20-foo"}, {"30-baz"}}
	annotations := []map[string]string{
		nil,
		{req: "[ bar ]"},
		{req + "/pod": `["bar", "baz"]`},
		{req + "/container." + ctrName: "- baz\n"},
		{req + "/container.other": "[baz]", req: "[10-foo]"},
		{req: "bar"},
		{req + "/pod": "[10-foo, 30-baz]"},
	}
	tolerations := []map[string]string{
		nil,
		{tol + "/container." + ctrName: "true"},
		{tol + "/pod": "false"},
		{tol: "maybe"},
		{tol: "1"},
		{tol + "/container.other": "true", tol: "false"},
		{tol + "/container." + ctrName: "false", tol + "/pod": "true"},
	}

	var total, deliberate int
	for _, tolKey := range []string{"", tol} {
		for _, op := range operators {
			for _, reg := range registered {
				for _, ann := range annotations {
					for _, tolAnn := range tolerations {
						all := map[string]string{}
						for k, v := range ann {
							all[k] = v
						}
						for k, v := range tolAnn {
							all[k] = v
						}
						tc := diffCase{
							name: fmt.Sprintf("tolKey=%q operator=%q registered=%q annotations=%q", tolKey, op, reg, all),
							cfg:  validate.Config{RequiredPlugins: op, TolerateMissingPluginsAnnotation: tolKey},
							spec: spec{plugins: reg, annotations: all},
						}
						total++
						if compare(t, tc) {
							deliberate++
						}
					}
				}
			}
		}
	}
	if deliberate == 0 || deliberate == total {
		t.Fatalf("deliberate change in %d of %d cases; the table does not exercise it properly", deliberate, total)
	}
	t.Logf("%d cases, %d of them the deliberate change", total, deliberate)
}
