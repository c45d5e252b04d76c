// Command testsum turns the output of each test runner nri-grpc uses into
// one kind of record, and prints the summary table of `make test`.
//
// Every suite of `make test` runs its tests through one of these modes, which
// print what a developer needs to read (failures in full, skips with their
// reasons, one line per package or file) and write the suite's counts into a
// report directory:
//
//	testsum go    -suite NAME -dir DIR   < go test -json output
//	testsum junit -suite NAME -dir DIR FILE...   (pytest --junitxml, node --test-reporter=junit)
//	testsum cargo -suite NAME -dir DIR   < cargo test output (passed through)
//	testsum table -dir DIR SUITE...      the summary table; exit 1 if a suite failed
//
// A suite's record is three files in DIR: NAME.counts ("passed failed
// skipped"), NAME.skips (one "test: reason" a line) and, written by the
// Makefile, NAME.result ("exit-code seconds [note]").
package main

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	mode, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet("testsum "+mode, flag.ExitOnError)
	suite := fs.String("suite", "", "the suite's name")
	dir := fs.String("dir", "", "the report directory")
	_ = fs.Parse(args)
	if *dir == "" || (mode != "table" && *suite == "") {
		usage()
	}
	var (
		c   counts
		err error
	)
	switch mode {
	case "go":
		c, err = goJSON(os.Stdin, os.Stdout)
	case "junit":
		c, err = junitFiles(fs.Args(), os.Stdout)
	case "cargo":
		c, err = cargo(os.Stdin, os.Stdout)
	case "table":
		ok, err := table(os.Stdout, *dir, fs.Args())
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsum:", err)
			os.Exit(2)
		}
		if !ok {
			os.Exit(1)
		}
		return
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(2)
	}
	if err := c.write(*dir, *suite); err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(2)
	}
	if c.failed > 0 {
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testsum go|cargo -suite NAME -dir DIR < output\n       testsum junit -suite NAME -dir DIR FILE...\n       testsum table -dir DIR SUITE...")
	os.Exit(2)
}

// counts is one suite's tally.
type counts struct {
	passed, failed, skipped int
	skips                   []string // "test\treason"
	failures                []string // test names
}

func (c *counts) write(dir, suite string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	line := fmt.Sprintf("%d %d %d\n", c.passed, c.failed, c.skipped)
	if err := os.WriteFile(filepath.Join(dir, suite+".counts"), []byte(line), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	for _, s := range c.skips {
		name, reason, _ := strings.Cut(s, "\t")
		b.WriteString(oneLine(name) + "\t" + oneLine(reason) + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, suite+".skips"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	var f strings.Builder
	for _, s := range c.failures {
		f.WriteString(oneLine(s) + "\n")
	}
	return os.WriteFile(filepath.Join(dir, suite+".failures"), []byte(f.String()), 0o644)
}

// oneLine folds s to one line of at most 200 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

// goEvent is one line of `go test -json` (test2json).
type goEvent struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type goTest struct {
	out []string
}

// goJSON reads test2json events: it prints each package's result line, the
// whole output of every failed test (and of a failed package outside its
// tests: build errors, panics, races, timeouts), and each skip with its
// reason.
func goJSON(r io.Reader, w io.Writer) (counts, error) {
	var c counts
	tests := map[string]*goTest{} // "pkg\x00Test"
	pkgOut := map[string][]string{}
	pkgFailedTests := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev goEvent
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			// Not an event: go build's own errors reach stdout this way.
			fmt.Fprintln(w, string(line))
			continue
		}
		if ev.Test == "" {
			switch ev.Action {
			case "build-output":
				// The compiler's errors; the package's "fail" follows.
				fmt.Fprint(w, ev.Output)
			case "output":
				pkgOut[ev.Package] = append(pkgOut[ev.Package], ev.Output)
			case "pass", "skip":
				out := pkgOut[ev.Package]
				if ev.Action == "skip" || (len(out) > 0 && strings.Contains(out[len(out)-1], "no test files")) {
					fmt.Fprintf(w, "?   \t%s\t[no test files]\n", ev.Package)
				} else {
					fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", ev.Package, ev.Elapsed)
				}
				delete(pkgOut, ev.Package)
			case "fail":
				// The package's own output holds what no test owns: a
				// build failure, a panic, a race report, a timeout.
				for _, l := range pkgOut[ev.Package] {
					if strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "ok ") {
						continue
					}
					fmt.Fprint(w, l)
				}
				if !pkgFailedTests[ev.Package] {
					// A package that failed outside its tests still fails
					// the suite.
					c.failed++
					c.failures = append(c.failures, ev.Package+" (package)")
				}
				fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n", ev.Package, ev.Elapsed)
				delete(pkgOut, ev.Package)
			}
			continue
		}
		key := ev.Package + "\x00" + ev.Test
		t := tests[key]
		if t == nil {
			t = &goTest{}
			tests[key] = t
		}
		switch ev.Action {
		case "output":
			if len(t.out) < 10000 {
				t.out = append(t.out, ev.Output)
			}
		case "pass":
			c.passed++
			delete(tests, key)
		case "skip":
			c.skipped++
			reason := skipReason(t.out)
			c.skips = append(c.skips, fmt.Sprintf("%s %s\t%s", short(ev.Package), ev.Test, reason))
			fmt.Fprintf(w, "SKIP\t%s %s: %s\n", short(ev.Package), ev.Test, reason)
			delete(tests, key)
		case "fail":
			c.failed++
			pkgFailedTests[ev.Package] = true
			c.failures = append(c.failures, short(ev.Package)+" "+ev.Test)
			// test2json gives each subtest its own lines: a parent's
			// output holds only what the parent itself logged.
			fmt.Fprintf(w, "=== output of failed %s %s:\n", short(ev.Package), ev.Test)
			for _, l := range t.out {
				fmt.Fprint(w, l)
			}
			delete(tests, key)
		}
	}
	return c, sc.Err()
}

// short drops the module path from a package path.
func short(pkg string) string {
	if i := strings.Index(pkg, "/nri-grpc/"); i >= 0 {
		return pkg[i+len("/nri-grpc/"):]
	}
	return pkg
}

var skipLine = regexp.MustCompile(`^\s+\S+\.go:\d+: (.*)$`)

// skipReason finds what t.Skip said: the last file:line output before the
// "--- SKIP" line.
func skipReason(out []string) string {
	for i := len(out) - 1; i >= 0; i-- {
		if m := skipLine.FindStringSubmatch(strings.TrimRight(out[i], "\n")); m != nil {
			return m[1]
		}
	}
	return "(no reason given)"
}

// junit is the subset of JUnit XML that pytest and node's test runner write.
type junitCase struct {
	Name      string `xml:"name,attr"`
	Classname string `xml:"classname,attr"`
	Failure   *struct {
		Message string `xml:"message,attr"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
	} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
	Children []junitCase `xml:"testcase"`
}

type junitDoc struct {
	Cases  []junitCase  `xml:"testcase"`
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name   string       `xml:"name,attr"`
	Cases  []junitCase  `xml:"testcase"`
	Suites []junitSuite `xml:"testsuite"`
}

// junitFiles counts the test cases of JUnit XML files. The runner has
// printed its own output already; this adds the skips with their reasons.
func junitFiles(files []string, w io.Writer) (counts, error) {
	var c counts
	if len(files) == 0 {
		return c, errors.New("junit: no files")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return c, err
		}
		var doc junitDoc
		if err := xml.Unmarshal(b, &doc); err != nil {
			return c, fmt.Errorf("%s: %w", f, err)
		}
		var walkSuite func(junitSuite)
		var walkCase func(junitCase)
		walkCase = func(tc junitCase) {
			if len(tc.Children) > 0 {
				// node's runner nests subtests in their parent.
				for _, ch := range tc.Children {
					walkCase(ch)
				}
				return
			}
			name := tc.Name
			if tc.Classname != "" && tc.Classname != "test" {
				name = tc.Classname + "::" + tc.Name
			}
			switch {
			case tc.Failure != nil || tc.Error != nil:
				c.failed++
				c.failures = append(c.failures, name)
			case tc.Skipped != nil:
				c.skipped++
				reason := tc.Skipped.Message
				if reason == "" {
					reason = "(no reason given)"
				}
				c.skips = append(c.skips, name+"\t"+reason)
				fmt.Fprintf(w, "SKIP\t%s: %s\n", name, oneLine(reason))
			default:
				c.passed++
			}
		}
		walkSuite = func(s junitSuite) {
			for _, tc := range s.Cases {
				walkCase(tc)
			}
			for _, ss := range s.Suites {
				walkSuite(ss)
			}
		}
		for _, tc := range doc.Cases {
			walkCase(tc)
		}
		for _, s := range doc.Suites {
			walkSuite(s)
		}
	}
	return c, nil
}

var (
	cargoResult  = regexp.MustCompile(`^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored;`)
	cargoIgnored = regexp.MustCompile(`^test (\S+) \.\.\. ignored(?:, (.*))?$`)
	cargoFailed  = regexp.MustCompile(`^test (\S+) \.\.\. FAILED$`)
)

// cargo passes cargo test's output through and adds up its result lines;
// ignored tests are the skipped ones, with the reason of #[ignore = "…"].
func cargo(r io.Reader, w io.Writer) (counts, error) {
	var c counts
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(w, line)
		if m := cargoResult.FindStringSubmatch(line); m != nil {
			p, _ := strconv.Atoi(m[1])
			f, _ := strconv.Atoi(m[2])
			s, _ := strconv.Atoi(m[3])
			c.passed += p
			c.failed += f
			c.skipped += s
		} else if m := cargoIgnored.FindStringSubmatch(line); m != nil {
			reason := m[2]
			if reason == "" {
				reason = "(no reason given)"
			}
			c.skips = append(c.skips, m[1]+"\t"+reason)
		} else if m := cargoFailed.FindStringSubmatch(line); m != nil {
			c.failures = append(c.failures, m[1])
		}
	}
	// Nothing counted means nothing ran (a build failure): the caller's
	// exit code says so.
	return c, sc.Err()
}

// table prints one row per suite and the total line; ok is false when a
// suite failed.
func table(w io.Writer, dir string, suites []string) (ok bool, err error) {
	ok = true
	var tp, tf, ts int
	fmt.Fprintln(w, "")
	fmt.Fprintf(w, "%-12s %-8s %7s %7s %8s %9s\n", "suite", "result", "passed", "failed", "skipped", "time")
	var notes []string
	for _, s := range suites {
		res, rerr := os.ReadFile(filepath.Join(dir, s+".result"))
		if rerr != nil {
			fmt.Fprintf(w, "%-12s %-8s\n", s, "not run")
			ok = false
			continue
		}
		f := strings.Fields(string(res))
		rc, secs, note := "1", "?", ""
		if len(f) > 0 {
			rc = f[0]
		}
		if len(f) > 1 {
			secs = f[1]
		}
		if len(f) > 2 {
			note = strings.Join(f[2:], " ")
		}
		p, fl, sk := "-", "-", "-"
		if cb, err := os.ReadFile(filepath.Join(dir, s+".counts")); err == nil {
			var cp, cf, cs int
			if n, _ := fmt.Sscan(string(cb), &cp, &cf, &cs); n == 3 {
				p, fl, sk = strconv.Itoa(cp), strconv.Itoa(cf), strconv.Itoa(cs)
				tp, tf, ts = tp+cp, tf+cf, ts+cs
			}
		}
		result := "ok"
		switch {
		case rc != "0":
			result, ok = "FAILED", false
		case note != "":
			result = "skipped"
			notes = append(notes, fmt.Sprintf("%s: %s", s, note))
		}
		if rc != "0" && fl == "0" {
			// The runner failed outside any test (a build, a crash).
			fl = "0+"
		}
		fmt.Fprintf(w, "%-12s %-8s %7s %7s %8s %8ss\n", s, result, p, fl, sk, secs)
		if rc != "0" {
			if fb, err := os.ReadFile(filepath.Join(dir, s+".failures")); err == nil {
				for _, l := range strings.Split(strings.TrimSpace(string(fb)), "\n") {
					if l != "" {
						notes = append(notes, fmt.Sprintf("%s: FAILED %s", s, l))
					}
				}
			}
		}
		if sb, err := os.ReadFile(filepath.Join(dir, s+".skips")); err == nil {
			notes = append(notes, skipNotes(s, string(sb))...)
		}
	}
	for _, n := range notes {
		fmt.Fprintln(w, "  "+n)
	}
	fmt.Fprintf(w, "total: %d passed, %d failed, %d skipped\n", tp, tf, ts)
	return ok, nil
}

// skipNotes groups a suite's skips by reason: one line per reason with the
// number of tests and the first of them (the suite's own output lists each).
func skipNotes(suite, skips string) []string {
	type group struct {
		first string
		n     int
	}
	groups := map[string]*group{}
	var order []string
	for _, l := range strings.Split(skips, "\n") {
		name, reason, ok := strings.Cut(l, "\t")
		if !ok {
			continue
		}
		g := groups[reason]
		if g == nil {
			g = &group{first: name}
			groups[reason] = g
			order = append(order, reason)
		}
		g.n++
	}
	sort.Strings(order)
	var out []string
	for _, r := range order {
		g := groups[r]
		if g.n == 1 {
			out = append(out, fmt.Sprintf("%s: skipped %s: %s", suite, g.first, r))
		} else {
			out = append(out, fmt.Sprintf("%s: skipped %d tests (%s, ...): %s", suite, g.n, g.first, r))
		}
	}
	return out
}
