package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"

	api "github.com/containerd/nri/pkg/api"

	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// runRuntime is a runtime's NRI alone in a process, for the dropin
// scenario's memory: an implementation of the pkg/adaptation API (-impl
// upstream or dropin) created and started as containerd does, in -dir
// (adaptationPathsIn; the driver prepared it). Besides the ctl commands it
// answers:
//
//	settle        "settle" once events are dispatched to a plugin (or
//	              "settle error <why>")
//	mem [FILE]    "mem <VmRSS kB> <VmHWM kB> <live heap bytes>" after a
//	              collection that returns freed memory to the system; with
//	              FILE, also writes a heap profile there
//	create N K B  N containers through their events (RunPodSandbox for
//	              each pod of two, then CreateContainer, PostCreateContainer,
//	              StartContainer, PostStartContainer), pods numbered from B,
//	              each create adjusted by K plugins: "created ok" or
//	              "created error <why>"
func runRuntime(args []string) error {
	fs := flag.NewFlagSet(roleRuntime, flag.ContinueOnError)
	impl := fs.String("impl", implUpstream, "the pkg/adaptation implementation: upstream or dropin")
	dir := fs.String("dir", "", "the runtime's directory (sockets, plugin paths, configuration)")
	profile := fs.String("cpuprofile", "", "write a CPU profile from go to quit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	nri, err := newRuntimeNRI(*impl, adaptationPathsIn(*dir))
	if err != nil {
		return err
	}
	c := newCtlWith(*profile, map[string]func(*ctl, []string){
		"settle": func(c *ctl, _ []string) {
			if err := nri.waitPlugins(1); err != nil {
				c.say("settle error %v", err)
				return
			}
			c.say("settle ok")
		},
		"mem": func(c *ctl, args []string) {
			rss, hwm, live := settledMemory()
			if len(args) == 1 {
				if err := writeHeapProfile(args[0]); err != nil {
					fmt.Fprintln(os.Stderr, "nribench runtime: heap profile:", err)
				}
			}
			c.say("mem %d %d %d", rss, hwm, live)
		},
		"create": func(c *ctl, args []string) {
			if err := createFromArgs(nri, args); err != nil {
				c.say("created error %v", err)
				return
			}
			c.say("created ok")
		},
	})
	if err := c.waitGo(); err != nil {
		return err
	}
	if err := nri.Start(); err != nil {
		return fmt.Errorf("%s: Start: %w", *impl, err)
	}
	c.say("started")
	c.serve()
	nri.Stop()
	return nil
}

// settledMemory collects garbage, returns the freed memory to the system,
// and reads VmRSS and VmHWM (kB) and the live heap (bytes).
func settledMemory() (rss, hwm int64, live uint64) {
	runtime.GC()
	debug.FreeOSMemory()
	rss, hwm = procStatus(os.Getpid())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return rss, hwm, ms.HeapAlloc
}

// writeHeapProfile writes the heap profile (what is live, by allocation
// site, as of the last collection) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close() // the write's error is the one to report
		return err
	}
	return f.Close()
}

func createFromArgs(a adaptationAPI, args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("create wants N K B, got %q", args)
	}
	var v [3]int
	for i, s := range args {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		v[i] = n
	}
	return createContainers(context.Background(), a, v[0], v[1], v[2])
}

// createContainers runs n containers, two per pod, through the events a
// runtime sends to create and start them; the requests are built one by one
// and dropped, as a runtime's would be (it keeps its own state, not these).
func createContainers(ctx context.Context, a adaptationAPI, n, k, base int) error {
	for p := 0; p*2 < n; p++ {
		pod := alphaPod(fixture.Pod(base + p))
		if err := a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
			return fmt.Errorf("RunPodSandbox %d: %w", base+p, err)
		}
		for c := 0; c < 2 && p*2+c < n; c++ {
			ctr := alphaCtr(fixture.Container(base+p, c))
			rsp, err := a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
			if err != nil {
				return fmt.Errorf("CreateContainer: %w", err)
			}
			if err := checkAdjusted(k, rsp.GetAdjust().GetAnnotations()); err != nil {
				return err
			}
			if err := a.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pod, Container: ctr}); err != nil {
				return fmt.Errorf("PostCreateContainer: %w", err)
			}
			if err := a.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr}); err != nil {
				return fmt.Errorf("StartContainer: %w", err)
			}
			if err := a.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: pod, Container: ctr}); err != nil {
				return fmt.Errorf("PostStartContainer: %w", err)
			}
		}
	}
	return nil
}
