package metrics_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/nri-grpc/nri-grpc/internal/metrics"
)

// The alerting rules and the Grafana dashboard of deploy/ may only query
// metrics nrid exports: the names come from the real registry
// (metrics.Reference: the NRI collectors, histogram series, the Go runtime,
// process and promhttp collectors), plus Prometheus' own up.

const (
	rulesFile     = "../../deploy/prometheus/nri-grpc-alerts.yaml"
	dashboardFile = "../../deploy/grafana/nri-grpc-dashboard.json"
)

// prometheusSeries are the series Prometheus makes itself for a target.
var prometheusSeries = []string{"up"}

// exported returns the series names nrid exports, and the label names of
// each.
func exported(t *testing.T) map[string][]string {
	t.Helper()
	infos, err := metrics.Reference()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, i := range infos {
		for _, s := range i.Series() {
			out[s] = i.Labels
		}
	}
	for _, s := range prometheusSeries {
		out[s] = nil
	}
	return out
}

// TestAlertRulesQueryExportedMetrics: every expression of every rule names
// only exported metrics, and each alert has what an operator needs.
func TestAlertRulesQueryExportedMetrics(t *testing.T) {
	known := exported(t)
	var doc struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if len(doc.Groups) != 1 || doc.Groups[0].Name != "nri-grpc" {
		t.Fatalf("%s: want one group nri-grpc, got %d groups", rulesFile, len(doc.Groups))
	}
	ops, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := markdownAnchors(string(ops))
	rules := doc.Groups[0].Rules
	if len(rules) == 0 {
		t.Fatal("no rules")
	}
	for _, r := range rules {
		if err := checkQuery(r.Expr, known); err != nil {
			t.Errorf("alert %s: %v", r.Alert, err)
		}
		if r.Alert == "" || r.For == "" || r.Labels["severity"] == "" {
			t.Errorf("alert %q: needs a name, a for: and a severity label", r.Alert)
		}
		for _, a := range []string{"summary", "description", "runbook_url"} {
			if r.Annotations[a] == "" {
				t.Errorf("alert %s: no %s annotation", r.Alert, a)
			}
		}
		const prefix = "https://github.com/nri-grpc/nri-grpc/blob/main/docs/operations.md#"
		if u := r.Annotations["runbook_url"]; !strings.HasPrefix(u, prefix) || !anchors[strings.TrimPrefix(u, prefix)] {
			t.Errorf("alert %s: runbook_url %q is not a section of docs/operations.md", r.Alert, u)
		}
	}
}

// TestDashboardQueriesExportedMetrics: every query of every panel and
// template variable of the dashboard names only exported metrics (and
// label_values only their labels).
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	known := exported(t)
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash dashboard
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if dash.UID == "" || dash.Title == "" || dash.SchemaVersion == 0 {
		t.Fatalf("%s: no uid, title or schemaVersion", dashboardFile)
	}
	var hasDatasource bool
	for _, v := range dash.Templating.List {
		switch v.Type {
		case "datasource":
			hasDatasource = string(v.Query) == `"prometheus"`
		case "query":
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil {
				t.Errorf("variable %s: query: %v", v.Name, err)
				continue
			}
			if err := checkLabelValues(q.Query, known); err != nil {
				t.Errorf("variable %s: %v", v.Name, err)
			}
		}
	}
	if !hasDatasource {
		t.Error("no Prometheus datasource variable")
	}
	n := 0
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: datasource %q, want ${datasource}", p.Title, p.Datasource.UID)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q: no queries", p.Title)
			}
			for _, tg := range p.Targets {
				n++
				if err := checkQuery(tg.Expr, known); err != nil {
					t.Errorf("panel %q, query %s: %v", p.Title, tg.RefID, err)
				}
			}
		}
	}
	walk(dash.Panels)
	if n == 0 {
		t.Fatal("no queries in the dashboard")
	}
}

// TestUnknownMetricsAreCaught: the check fails on names nrid does not
// export, wherever they are in a query.
func TestUnknownMetricsAreCaught(t *testing.T) {
	known := exported(t)
	for _, q := range []string{
		`rate(nri_plugin_callz_total[5m])`,
		`sum by (plugin) (rate(nri_plugin_calls_total[5m])) / on (plugin) group_left nri_plugin_status_typo`,
		`histogram_quantile(0.99, rate(nri_plugin_calls_total_bucket[5m]))`,
		`nri_events_held > 0 or absent(nri_nothing)`,
		`{__name__="nri_events_held"}`,
	} {
		if err := checkQuery(q, known); err == nil {
			t.Errorf("checkQuery(%q) = nil, want an error", q)
		}
	}
	if err := checkLabelValues(`label_values(nri_plugins_registered, plugin)`, known); err == nil {
		t.Error("label_values of a label the metric does not have: no error")
	}
}

// TestMetricNames: the tokenizer finds the metric names of queries, and
// only them.
func TestMetricNames(t *testing.T) {
	for q, want := range map[string][]string{
		`up{job="nrid"} == 0`: {"up"},
		`sum by (instance, plugin, reason) (increase(nri_plugin_evictions_total[30m])) > 0`:         {"nri_plugin_evictions_total"},
		`histogram_quantile(0.99, sum by (le) (rate(x_bucket{a=~"$v", b!="}"}[$__rate_interval])))`: {"x_bucket"},
		`a / on (plugin) group_left (status) b unless c offset 5m`:                                  {"a", "b", "c"},
		`sum without (le) (a) and bool b or vector(0) * -1.5e3 + Inf`:                               {"a", "b"},
		`topk(5, count_values("v", a)) @ end()`:                                                     {"a"},
		`rate(a[5m:1m])`:                                                                            {"a"},
		`label_replace(a, "dst", "$1", "src", "(.*)")`:                                              {"a"},
		"sum(a)\n  by (x)\n/ ignoring (y) b":                                                        {"a", "b"},
		`a{instance=~"$instance", plugin=~"${plugin}"}`:                                             {"a"},
	} {
		got, err := metricNames(q)
		if err != nil {
			t.Errorf("metricNames(%q): %v", q, err)
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("metricNames(%q) = %q, want %q", q, got, want)
		}
	}
	for _, bad := range []string{`a{b="c"`, `rate(a[5m)`, `"open`, `a $b`, `{__name__="a"}`} {
		if _, err := metricNames(bad); err == nil {
			t.Errorf("metricNames(%q) = nil error, want one", bad)
		}
	}
}

type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

// checkQuery fails if q names a metric that is not in known.
func checkQuery(q string, known map[string][]string) error {
	names, err := metricNames(q)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("%q names no metric", q)
	}
	for _, n := range names {
		if _, ok := known[n]; !ok {
			return fmt.Errorf("%q: nrid exports no metric %s", q, n)
		}
	}
	return nil
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// checkLabelValues checks a Grafana label_values(query, label) variable:
// the query names known metrics, each with that label.
func checkLabelValues(q string, known map[string][]string) error {
	m := labelValuesRE.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return fmt.Errorf("%q is not label_values(query, label)", q)
	}
	if err := checkQuery(m[1], known); err != nil {
		return err
	}
	names, _ := metricNames(m[1])
	for _, n := range names {
		if !slices.Contains(known[n], m[2]) && m[2] != "instance" && m[2] != "job" {
			return fmt.Errorf("%q: %s has no label %s", q, n, m[2])
		}
	}
	return nil
}

// PromQL words that are not metric names: keywords and binary operators
// (functions and aggregations are told by the parenthesis that follows).
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
	"inf": true, "nan": true,
}

// promqlGrouping are the keywords followed by a parenthesised label list.
var promqlGrouping = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// metricNames returns the metric names q selects, in order, each once. It
// is a tokenizer, not a parser: it skips strings, label matchers ({...}),
// ranges and subqueries ([...]), numbers and durations, grouping label
// lists, and identifiers followed by "(" (functions, aggregations); what
// is left are metric names. Grafana variables may appear only in strings
// and ranges. It refuses selectors by __name__ (it could not check them).
func metricNames(q string) ([]string, error) {
	var out []string
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(q) && strings.IndexByte(" \t\r\n", q[i]) >= 0 {
			i++
		}
		return i
	}
	// skipString returns the index after the string that opens at i (a
	// backslash escapes in "..." and '...', not in `...`).
	skipString := func(i int) (int, error) {
		quote := q[i]
		for j := i + 1; j < len(q); j++ {
			switch {
			case q[j] == '\\' && quote != '`':
				j++
			case q[j] == quote:
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string at %d in %q", i, q)
	}
	// closing returns the index after the close that ends what opens at i,
	// skipping strings inside.
	closing := func(i int, open, close byte) (int, error) {
		depth := 0
		for j := i; j < len(q); j++ {
			switch c := q[j]; c {
			case '"', '\'', '`':
				end, err := skipString(j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case open:
				depth++
			case close:
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("unclosed %c at %d in %q", open, i, q)
	}
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case strings.IndexByte(" \t\r\n()+-*/%^=!<>,@", c) >= 0:
			i++
		case c == '{':
			end, err := closing(i, '{', '}')
			if err != nil {
				return nil, err
			}
			if strings.Contains(q[i:end], "__name__") {
				return nil, fmt.Errorf("selector by __name__ in %q: name the metric", q)
			}
			i = end
		case c == '[':
			end, err := closing(i, '[', ']')
			if err != nil {
				return nil, err
			}
			i = end
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(i)
			if err != nil {
				return nil, err
			}
			i = end
		case c >= '0' && c <= '9' || c == '.':
			for i < len(q) && (isIdent(q[i]) || q[i] == '.') {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(q) && isIdent(q[j]) {
				j++
			}
			word := q[i:j]
			next := skipSpace(j)
			lower := strings.ToLower(word)
			switch {
			case promqlGrouping[lower]:
				if next < len(q) && q[next] == '(' {
					end, err := closing(next, '(', ')')
					if err != nil {
						return nil, err
					}
					j = end
				}
			case promqlKeywords[lower]:
			case next < len(q) && q[next] == '(':
				// A function or an aggregation.
			case aggregationModifier(q[next:]):
				// An aggregation with its grouping first: sum by (x) (...).
			default:
				if !slices.Contains(out, word) {
					out = append(out, word)
				}
			}
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q at %d in %q", c, i, q)
		}
	}
	return out, nil
}

// aggregationModifier reports whether s starts with the keyword by or
// without followed by "(".
func aggregationModifier(s string) bool {
	for _, kw := range []string{"by", "without"} {
		if rest, ok := strings.CutPrefix(strings.ToLower(s), kw); ok && strings.HasPrefix(strings.TrimLeft(rest, " \t\r\n"), "(") {
			return true
		}
	}
	return false
}

// markdownAnchors returns the GitHub anchors of the headings of md.
func markdownAnchors(md string) map[string]bool {
	out := map[string]bool{}
	keep := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		h = strings.ReplaceAll(keep.ReplaceAllString(h, ""), " ", "-")
		out[h] = true
	}
	return out
}
