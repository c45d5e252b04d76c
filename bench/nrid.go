package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// nridPackage is built once per run for the bridge and rss scenarios.
const nridPackage = "github.com/nri-grpc/nri-grpc/cmd/nrid"

// nridBinary returns the nrid executable to run, building cmd/nrid once
// into dir; "" means the in-binary nrid role (Config.Nrid "role", or the
// build failed: then why).
func nridBinary(cfg *Config, dir string, logf func(string, ...any)) (string, string) {
	switch cfg.Nrid {
	case "role":
		return "", "the nrid role of this binary (server + bridge runtime side), as asked"
	case "", "build":
	default:
		return cfg.Nrid, cfg.Nrid
	}
	out := filepath.Join(dir, "nrid")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", out, nridPackage)
	if b, err := cmd.CombinedOutput(); err != nil {
		why := fmt.Sprintf("building %s failed (%v: %s); using the nrid role of this binary instead", nridPackage, err, strings.TrimSpace(string(b)))
		logf("%s", why)
		return "", why
	}
	logf("built %s in %.1fs", nridPackage, time.Since(start).Seconds())
	return out, "cmd/nrid, built from this tree"
}

// startRealNrid starts the nrid executable with the bridge's runtime side
// attached to the classic runtime at runtimeSock, and waits until it is
// attached (its health turns SERVING once the bridge synchronized).
func startRealNrid(e *env, bin, runtimeSock string) (p *proc, sock, dir string, err error) {
	sock = filepath.Join(e.dir, "nrid.sock")
	dir = filepath.Join(e.dir, "nrid-plugins")
	conf := filepath.Join(e.dir, "nrid.toml")
	// The defaults of deploy/nrid.toml but for the paths, the bridge, and the
	// same long timeouts as everywhere in the benchmark. Logging at warn:
	// every refusal is still logged; calls are logged at debug only.
	toml := fmt.Sprintf(`[server]
socket = %q
plugin_socket_dir = %q
request_timeout = "60s"
registration_timeout = "60s"
node_name = "bench-node"

[runtime]
required = true

[log]
level = "warn"

[bridge]
runtime_socket = %q
`, sock, dir, runtimeSock)
	if err := os.WriteFile(conf, []byte(toml), 0o600); err != nil {
		return nil, "", "", err
	}
	p, err = startExternal("nrid", e.cfg.Verbose, bin, "--config", conf)
	if err != nil {
		return nil, "", "", err
	}
	if err := waitServing(p, sock); err != nil {
		p.kill()
		return nil, "", "", err
	}
	return p, sock, dir, nil
}

// waitServing polls nrid's health until it is SERVING.
func waitServing(p *proc, sock string) error {
	deadline := time.Now().Add(procWait)
	var cc *grpc.ClientConn
	defer func() {
		if cc != nil {
			cc.Close()
		}
	}()
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("nrid exited: %s", p.errText())
		default:
		}
		if cc == nil {
			if _, err := os.Stat(sock); err == nil {
				cc, _ = grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
			}
		}
		if cc != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			rsp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
			cancel()
			if err == nil && rsp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
				return nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.New("nrid did not attach to the classic runtime: " + p.errText())
}

// startExternal starts a program that has no control channel: its CPU,
// memory and context switches are read from /proc.
func startExternal(name string, verbose bool, path string, args ...string) (*proc, error) {
	cmd := exec.Command(path, args...)
	p := &proc{name: name, cmd: cmd, external: true, lines: make(chan string), done: make(chan struct{})}
	if verbose {
		cmd.Stderr = os.Stderr
	} else {
		cmd.Stderr = lockedWriter{p}
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// procCPU is the CPU time of every live thread of a process, from
// /proc/<pid>/task/*/schedstat (nanoseconds on CPU).
func procCPU(pid int) time.Duration {
	dirs, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var ns int64
	for _, d := range dirs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, d.Name()))
		if err != nil {
			continue
		}
		var run int64
		if _, err := fmt.Sscan(string(b), &run); err == nil {
			ns += run
		}
	}
	return time.Duration(ns)
}

// terminate stops an external process with SIGTERM (nrid stops gracefully).
func (p *proc) terminate() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.kill()
	}
}
