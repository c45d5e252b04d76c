// Command nribench compares classic NRI (upstream pkg/adaptation with
// pkg/stub plugins over ttrpc) with nri-grpc on identical work, in one run,
// and prints a table per scenario and a summary line of ratios against the
// project's targets. See bench/README.md.
//
//	go run ./bench/cmd/nribench -quick          # under a minute, one run
//	go run ./bench/cmd/nribench                 # the full set, medians of 3
//	go run ./bench/cmd/nribench -only create,sync -cpuprofile /tmp/prof
//	go run ./bench/cmd/nribench -plots bench/plots   # SVG plots of how cost grows
//
// Plugin and nrid processes are this binary re-executed in a role.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/nri-grpc/nri-grpc/bench"
)

func main() {
	bench.RoleMain()

	quick := flag.Bool("quick", false, "small operation counts and one run: finishes in under a minute")
	runs := flag.Int("runs", 3, "runs of every configuration (results are medians); -quick defaults to 1")
	only := flag.String("only", "", "comma-separated scenarios to run: "+strings.Join(bench.Scenarios, ", "))
	cpuprofile := flag.String("cpuprofile", "", "directory for CPU profiles of every measured window and role process")
	as := flag.Bool("as", true, "also drive nri-grpc through AdaptationService and report the hop")
	lifecycleK := flag.Int("lifecycle-k", 3, "plugins in the lifecycle scenario")
	nrid := flag.String("nrid", "build", `nrid for the bridge and rss scenarios: "build" (go build cmd/nrid once), "role" (this binary's server+bridge role) or a path`)
	plots := flag.String("plots", "", "directory for SVG plots of how cost grows (calls/s and CPU by K, sync time and bytes and nrid RSS by N)")
	verbose := flag.Bool("v", false, "pass the plugin processes' stderr through")
	flag.Parse()

	cfg := bench.Config{
		Quick:             *quick,
		Runs:              *runs,
		CPUProfileDir:     *cpuprofile,
		AdaptationService: *as,
		LifecycleK:        *lifecycleK,
		Verbose:           *verbose,
		Nrid:              *nrid,
		PlotDir:           *plots,
	}
	if *quick && !flagSet("runs") {
		cfg.Runs = 1
	}
	if *only != "" {
		for _, s := range strings.Split(*only, ",") {
			if s = strings.TrimSpace(s); s != "" {
				cfg.Only = append(cfg.Only, s)
			}
		}
	}
	if err := bench.Run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "nribench:", err)
		os.Exit(1)
	}
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}
