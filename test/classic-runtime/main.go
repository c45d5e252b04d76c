// Command classic-runtime is a classic NRI runtime built against
// github.com/containerd/nri v0.12.3, the NRI of containerd v2.4.2: upstream
// pkg/adaptation serving the NRI socket named by -socket. The bridge tests
// run it to attach nri-grpc's bridge to a runtime of that release (the
// tests' own pkg/adaptation is the newer one of the main module).
//
// It is driven through stdin and stdout, one JSON object a line each way:
//
//	{"op":"start","state":<SynchronizeRequest>}  starts the runtime with the pods and containers of state
//	{"op":"settle"}                              waits until no plugin is being synchronized
//	{"op":"create","req":<CreateContainerRequest>} CreateContainer; answers rsp (a CreateContainerResponse) or err
//	{"op":"version"}                             answers the NRI version the runtime announces to plugins
//	{"op":"bench","req":<CreateContainerRequest>,"n":N}
//	                                             N CreateContainers of req's container (ids suffixed -0 … -N-1);
//	                                             answers rsp: a JSON benchResult
//
// Messages travel as their protobuf encoding (base64 in JSON). Every answer
// is {"err":"...","rsp":...}; err is empty on success.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/version"
	"google.golang.org/protobuf/proto"
)

type command struct {
	Op    string `json:"op"`
	State []byte `json:"state,omitempty"`
	Req   []byte `json:"req,omitempty"`
	N     int    `json:"n,omitempty"`
}

// benchResult is what the bench op measured: each CreateContainer's
// latency in nanoseconds, in order, and the CPU time (user and system)
// the runtime's process spent over all of them.
type benchResult struct {
	Nanos  []int64 `json:"nanos"`
	CPUNs  int64   `json:"cpu_ns"`
	Errors int     `json:"errors"`
}

// cpuNow is the CPU time this process has spent so far.
func cpuNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// bench runs n CreateContainers of req's container, each with its own id.
func bench(ctx context.Context, a *adaptation.Adaptation, req *api.CreateContainerRequest, n int) benchResult {
	res := benchResult{Nanos: make([]int64, 0, n)}
	base := req.GetContainer().GetId()
	cpu := cpuNow()
	for i := range n {
		req.Container.Id = fmt.Sprintf("%s-%d", base, i)
		start := time.Now()
		if _, err := a.CreateContainer(ctx, req); err != nil {
			res.Errors++
		}
		res.Nanos = append(res.Nanos, time.Since(start).Nanoseconds())
	}
	res.CPUNs = cpuNow() - cpu
	return res
}

type answer struct {
	Err string `json:"err,omitempty"`
	Rsp []byte `json:"rsp,omitempty"`
}

func main() {
	socket := flag.String("socket", "", "the NRI socket to serve")
	timeout := flag.Duration("timeout", 2*time.Second, "the plugin request timeout")
	flag.Parse()
	if err := run(*socket, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "classic-runtime:", err)
		os.Exit(1)
	}
}

func run(socket string, timeout time.Duration) error {
	adaptation.SetPluginRequestTimeout(timeout)
	dir, err := os.MkdirTemp("", "classic-runtime-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var (
		a     *adaptation.Adaptation
		state = &api.SynchronizeRequest{}
	)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	ctx := context.Background()
	for in.Scan() {
		var cmd command
		if err := json.Unmarshal(in.Bytes(), &cmd); err != nil {
			return err
		}
		var ans answer
		switch cmd.Op {
		case "start":
			if err := proto.Unmarshal(cmd.State, state); err != nil {
				return err
			}
			sync := func(ctx context.Context, cb adaptation.SyncCB) error {
				_, err := cb(ctx, state.Pods, state.Containers)
				return err
			}
			update := func(context.Context, []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) { return nil, nil }
			a, err = adaptation.New("classic-runtime", "v0.12.3-test", sync, update,
				adaptation.WithSocketPath(socket),
				adaptation.WithPluginPath(filepath.Join(dir, "plugins")),
				adaptation.WithPluginConfigPath(filepath.Join(dir, "conf")))
			if err != nil {
				return err
			}
			if err := a.Start(); err != nil {
				return err
			}
			defer a.Stop()
		case "settle":
			a.BlockPluginSync().Unblock()
		case "create":
			req := &api.CreateContainerRequest{}
			if err := proto.Unmarshal(cmd.Req, req); err != nil {
				return err
			}
			rsp, err := a.CreateContainer(ctx, req)
			if err != nil {
				ans.Err = err.Error()
			} else if ans.Rsp, err = proto.Marshal(rsp); err != nil {
				return err
			}
		case "bench":
			req := &api.CreateContainerRequest{}
			if err := proto.Unmarshal(cmd.Req, req); err != nil {
				return err
			}
			if req.Container == nil || cmd.N <= 0 || cmd.N > 1_000_000 {
				return fmt.Errorf("bench: a container and 1 to 1000000 creations, got %d", cmd.N)
			}
			if ans.Rsp, err = json.Marshal(bench(ctx, a, req, cmd.N)); err != nil {
				return err
			}
		case "version":
			ans.Rsp = []byte(version.GetFromBuildInfo())
		default:
			return fmt.Errorf("unknown op %q", cmd.Op)
		}
		if err := out.Encode(ans); err != nil {
			return err
		}
	}
	return in.Err()
}
