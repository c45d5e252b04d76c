package main

import (
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	nriversion "github.com/nri-grpc/nri-grpc/internal/version"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// report is what a subcommand prints: its title, the checks' report and
// what was tested.
type report struct {
	Command string             `json:"command"`
	Name    string             `json:"name"` // short subject: the JUnit class
	Subject string             `json:"subject"`
	Version string             `json:"nritest_version"`
	Started time.Time          `json:"started"`
	Elapsed time.Duration      `json:"elapsed_ns"`
	Counts  map[string]int     `json:"counts"`
	Report  conformance.Report `json:"report"`
}

// outFlags are the output flags every subcommand has.
type outFlags struct {
	json     bool
	jsonFile string
	junit    string
	verbose  bool
}

// register adds the output flags to fs.
func (o *outFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print the report as JSON instead of a table")
	fs.StringVar(&o.jsonFile, "json-file", "", "also write the JSON report to this file")
	fs.StringVar(&o.junit, "junit", "", "also write the report as JUnit XML to this file")
	fs.BoolVar(&o.verbose, "v", false, "print every message of every check")
}

// version returns nritest's version: the release stamp (make release), else
// the module version (go install: the tag), as nrid and nrictl report theirs.
func version() string {
	if v := nriversion.Get().Version; v != "" {
		return v
	}
	return "(devel)"
}

// finish prints r as asked and returns errFailed when a check failed.
func finish(r *report, o outFlags, stdout io.Writer) error {
	r.Version = version()
	r.Elapsed = time.Since(r.Started)
	r.Counts = map[string]int{}
	for _, res := range []conformance.Result{conformance.Pass, conformance.Fail, conformance.Skip, conformance.Warn} {
		r.Counts[strings.ToLower(string(res))] = r.Report.Count(res)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if o.json {
		if _, err := stdout.Write(b); err != nil {
			return err
		}
	} else {
		printTable(r, o.verbose, stdout)
	}
	if o.jsonFile != "" {
		if err := os.WriteFile(o.jsonFile, b, 0o644); err != nil {
			return err
		}
	}
	if o.junit != "" {
		if err := writeJUnit(r, o.junit); err != nil {
			return err
		}
	}
	if r.Report.Failed() {
		return errFailed
	}
	return nil
}

// printTable prints the report as a table: scenario, result, detail (the
// first message; every message with verbose, and always for failures),
// each on one line of at most 200 characters (unbounded with verbose).
func printTable(r *report, verbose bool, w io.Writer) {
	fmt.Fprintf(w, "nritest %s: %s\n\n", r.Command, r.Subject)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tRESULT\tDETAIL")
	for _, s := range r.Report.Scenarios {
		msgs := s.Messages
		if !verbose && s.Result != conformance.Fail && len(msgs) > 1 {
			msgs = msgs[:1]
		}
		line := oneLine
		if verbose {
			line = func(s string) string { return strings.Join(strings.Fields(s), " ") }
		}
		detail := ""
		if len(msgs) > 0 {
			detail = line(msgs[0])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Group+"/"+s.Name, s.Result, detail)
		for _, m := range msgs[min(1, len(msgs)):] {
			fmt.Fprintf(tw, "\t\t%s\n", line(m))
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped, %d warnings in %.1fs\n",
		r.Report.Count(conformance.Pass), r.Report.Count(conformance.Fail), r.Report.Count(conformance.Skip),
		r.Report.Count(conformance.Warn), r.Elapsed.Seconds())
}

// oneLine shortens a message to one line of at most 200 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:197]) + "..."
	}
	return s
}

// JUnit XML, as tools/testsum's junit reader (and CI systems) take it.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func writeJUnit(r *report, path string) error {
	s := junitSuite{Name: "nritest " + r.Command + ": " + r.Subject, Time: r.Elapsed.Seconds()}
	for _, sc := range r.Report.Scenarios {
		c := junitCase{Name: sc.Group + "/" + sc.Name, Classname: "nritest." + r.Command + "." + r.Name, Time: sc.Duration.Seconds()}
		text := strings.Join(sc.Messages, "\n")
		first := ""
		if len(sc.Messages) > 0 {
			first = oneLine(sc.Messages[0])
		}
		switch sc.Result {
		case conformance.Fail:
			c.Failure = &junitMessage{Message: first, Text: text}
			s.Failures++
		case conformance.Skip:
			c.Skipped = &junitMessage{Message: first}
			s.Skipped++
		default:
			c.SystemOut = text
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), b...), 0o644)
}
