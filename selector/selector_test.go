package selector

import (
	"errors"
	"strings"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// The examples of the Kubernetes documentation ("Labels and Selectors")
// and of its label-selector parser's tests.
func TestParseLabelsMatches(t *testing.T) {
	for _, tc := range []struct {
		sel    string
		labels map[string]string
		want   bool
	}{
		{"", nil, true},
		{"  ", map[string]string{"a": "b"}, true},
		{"environment = production", map[string]string{"environment": "production"}, true},
		{"environment = production", map[string]string{"environment": "dev"}, false},
		{"environment==production", map[string]string{"environment": "production"}, true},
		{"tier != frontend", map[string]string{"tier": "backend"}, true},
		{"tier != frontend", map[string]string{}, true}, // absent: matches
		{"tier != frontend", map[string]string{"tier": "frontend"}, false},
		{"environment=production,tier!=frontend", map[string]string{"environment": "production", "tier": "backend"}, true},
		{"environment=production,tier!=frontend", map[string]string{"environment": "production", "tier": "frontend"}, false},
		{"environment in (production, qa)", map[string]string{"environment": "qa"}, true},
		{"environment in (production, qa)", map[string]string{"environment": "dev"}, false},
		{"environment in (production, qa)", map[string]string{}, false},
		{"tier notin (frontend, backend)", map[string]string{"tier": "cache"}, true},
		{"tier notin (frontend, backend)", map[string]string{}, true},
		{"tier notin (frontend, backend)", map[string]string{"tier": "backend"}, false},
		{"partition", map[string]string{"partition": ""}, true},
		{"partition", map[string]string{}, false},
		{"!partition", map[string]string{}, true},
		{"!partition", map[string]string{"partition": "x"}, false},
		{"partition in (customerA, customerB),environment!=qa", map[string]string{"partition": "customerA", "environment": "prod"}, true},
		{"app.kubernetes.io/name=web", map[string]string{"app.kubernetes.io/name": "web"}, true},
		{"x=", map[string]string{"x": ""}, true},
		{"x=", map[string]string{"x": "y"}, false},
		{"x in (a,)", map[string]string{"x": ""}, true},
		{"x=in", map[string]string{"x": "in"}, true},
		{"x in (in,notin)", map[string]string{"x": "notin"}, true},
		{"\tapp\n=\rweb ", map[string]string{"app": "web"}, true},
	} {
		sel, err := ParseLabels(tc.sel)
		if err != nil {
			t.Errorf("ParseLabels(%q): %v", tc.sel, err)
			continue
		}
		if got := sel.Matches(tc.labels); got != tc.want {
			t.Errorf("%q matches %v = %v, want %v", tc.sel, tc.labels, got, tc.want)
		}
	}
}

func TestParseLabelsRefuses(t *testing.T) {
	for _, tc := range []struct{ sel, rule string }{
		{"x in ()", "at least one value"},
		{"x in (a", "expected a value, ',' or ')'"},
		{"x in a", "expected '('"},
		{"x > 1", "not supported"},
		{"x < 1", "not supported"},
		{"x=a b", "expected ',' or the end"},
		{"x=a,", "a requirement must follow ','"},
		{",x", "expected a label key"},
		{"!x=a", "expected ',' or the end"},
		{"in=a", "expected a label key"},
		{"=a", "expected a label key"},
		{"x==", ""},                   // empty value: fine
		{"-x=a", "label key"},         // name must start alphanumeric
		{"x_=a", "label key"},         // nor end with '_'
		{"Example.com/x=a", "prefix"}, // prefix is lower case
		{"a/b/c", "at most one '/'"},  // one slash
		{"example.com/=a", "must not be empty"},
		{"x=" + strings.Repeat("v", 64), "at most 63"},
		{strings.Repeat("k", 64), "at most 63"},
		{strings.Repeat("a", 254) + "/x", "at most 253"},
		{"x=(a)", "expected a value after"},
		{"x=a\xff", "not valid UTF-8"},
		{"x in (a b)", "expected a value, ',' or ')'"},
		{strings.Repeat("a,", 2049), "at most 4096"},
		{"x=é", "label value"},
	} {
		_, err := ParseLabels(tc.sel)
		if tc.rule == "" {
			if err != nil {
				t.Errorf("ParseLabels(%q): %v", tc.sel, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.rule) {
			t.Errorf("ParseLabels(%q) = %v, want an error with %q", tc.sel, err, tc.rule)
		}
		if err != nil && len(err.Error()) > 300 {
			t.Errorf("ParseLabels(%q): error of %d bytes echoes too much", tc.sel[:20], len(err.Error()))
		}
	}
}

func TestLabelSelectorString(t *testing.T) {
	sel, err := ParseLabels("a in (y, x), !b, c, d==e, f!=g")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sel.String(), "a in (x,y),!b,c,d=e,f!=g"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	again, err := ParseLabels(sel.String())
	if err != nil || again.String() != sel.String() {
		t.Errorf("round trip: %q, %v", again.String(), err)
	}
}

func TestMatchName(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "anything", true},
		{"web", "web", true},
		{"web", "web2", false},
		{"web-*", "web-1", true},
		{"web-*", "web-", true},
		{"web-*", "db-1", false},
		{"*-sidecar", "istio-sidecar", true},
		{"*-sidecar", "istio-sidecar-x", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"?", "é", true}, // one character, two bytes
		{"??", "é", false},
		{"w?b", "web", true},
		{"w?b", "wb", false},
		{`a\*`, `a\xyz`, true}, // no escapes: '\' is literal
		{`a\*`, `a*`, false},
		{"*a*a*a*a*a*b", strings.Repeat("a", 200), false},
	} {
		if got := MatchName(tc.pattern, tc.name); got != tc.want {
			t.Errorf("MatchName(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func pod(ns, handler string, labels map[string]string) *nriv1beta1.PodSandbox {
	return &nriv1beta1.PodSandbox{Id: "p", Namespace: ns, RuntimeHandler: handler, Labels: labels}
}

func TestSetMatch(t *testing.T) {
	web := pod("prod", "", map[string]string{"app": "web"})
	gpu := pod("ml", "nvidia", map[string]string{"app": "train"})
	ctr := func(name string) *nriv1beta1.Container { return &nriv1beta1.Container{Name: name} }
	set := MustCompile(
		&nriv1beta1.EventSelector{Namespaces: []string{"prod", "staging"}, PodLabels: "app=web", ContainerNames: []string{"nginx*"}},
		&nriv1beta1.EventSelector{RuntimeHandlers: []string{"nvidia"}},
	)
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"pod event ignores container names", set.MatchPod(web), true},
		{"container matches all of selector 0", set.MatchContainer(web, ctr("nginx-1")), true},
		{"container name not selected", set.MatchContainer(web, ctr("envoy")), false},
		{"selector 1 by handler", set.MatchContainer(gpu, ctr("anything")), true},
		{"other namespace", set.MatchPod(pod("dev", "", map[string]string{"app": "web"})), false},
		{"other labels", set.MatchPod(pod("prod", "", map[string]string{"app": "db"})), false},
		{"default handler not selected by [nvidia]", set.MatchPod(pod("x", "", nil)), false},
		{"nil set matches all", (*Set)(nil).MatchContainer(web, ctr("x")), true},
		{"empty selector matches all", MustCompile(&nriv1beta1.EventSelector{}).MatchPod(gpu), true},
		{"empty handler entry selects the default handler", MustCompile(&nriv1beta1.EventSelector{RuntimeHandlers: []string{""}}).MatchPod(web), true},
		{"empty handler entry does not select others", MustCompile(&nriv1beta1.EventSelector{RuntimeHandlers: []string{""}}).MatchPod(gpu), false},
		{"Match nil container is a pod match", set.Match(web, nil), true},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestCompileRefuses(t *testing.T) {
	many := func(n int, v string) []string {
		l := make([]string, n)
		for i := range l {
			l[i] = v
		}
		return l
	}
	ok := &nriv1beta1.EventSelector{}
	for _, tc := range []struct {
		sels  []*nriv1beta1.EventSelector
		field string
		rule  string
	}{
		{make([]*nriv1beta1.EventSelector, 17), "selectors", "17 selectors, at most 16"},
		{[]*nriv1beta1.EventSelector{ok, {PodLabels: "x in ()"}}, "selectors[1].pod_labels", "at least one value"},
		{[]*nriv1beta1.EventSelector{{Namespaces: many(65, "a")}}, "selectors[0].namespaces", "65 entries, at most 64"},
		{[]*nriv1beta1.EventSelector{{Namespaces: []string{"a", strings.Repeat("n", 254)}}}, "selectors[0].namespaces[1]", "254 bytes, at most 253"},
		{[]*nriv1beta1.EventSelector{{ContainerNames: []string{"\xff"}}}, "selectors[0].container_names[0]", "not valid UTF-8"},
		{[]*nriv1beta1.EventSelector{{RuntimeHandlers: many(65, "")}}, "selectors[0].runtime_handlers", "at most 64"},
		{[]*nriv1beta1.EventSelector{{PodLabels: strings.Repeat("a", 4097)}}, "selectors[0].pod_labels", "4097 bytes, at most 4096"},
	} {
		_, err := Compile(tc.sels)
		var se *Error
		if !errors.As(err, &se) {
			t.Errorf("%s: got %v, want *Error", tc.field, err)
			continue
		}
		if se.Field != tc.field || !strings.Contains(se.Rule, tc.rule) {
			t.Errorf("got %q: %q, want %q: ...%q...", se.Field, se.Rule, tc.field, tc.rule)
		}
	}
	// At the bounds: accepted.
	sels := make([]*nriv1beta1.EventSelector, MaxSelectors)
	for i := range sels {
		sels[i] = &nriv1beta1.EventSelector{Namespaces: many(64, strings.Repeat("n", 253)), PodLabels: strings.Repeat(" ", 4096)}
	}
	if _, err := Compile(sels); err != nil {
		t.Errorf("at the bounds: %v", err)
	}
}

func TestString(t *testing.T) {
	got := String([]*nriv1beta1.EventSelector{
		{Namespaces: []string{"a", "b"}, PodLabels: "app=web", ContainerNames: []string{"c*"}, RuntimeHandlers: []string{"runc"}},
		{},
	})
	if want := "ns=a|b labels=app=web names=c* handlers=runc; *"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
