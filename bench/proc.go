package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// procWait bounds what the driver waits for from a role process.
const procWait = 2 * time.Minute

// proc is a role process started by the driver.
type proc struct {
	name     string
	cmd      *exec.Cmd
	external bool // no control channel (nrid): read from /proc
	stdin    io.WriteCloser
	lines    chan string
	done     chan struct{}

	mu     sync.Mutex
	stderr bytes.Buffer
}

// startProc re-executes this binary in role with args. verbose passes the
// process's stderr through; otherwise it is kept for error messages.
func startProc(name, role string, verbose bool, args ...string) (*proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	p := &proc{name: name, cmd: cmd, lines: make(chan string, 64), done: make(chan struct{})}
	if verbose {
		cmd.Stderr = os.Stderr
	} else {
		cmd.Stderr = lockedWriter{p}
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	if _, err := p.expect("ready"); err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

type lockedWriter struct{ p *proc }

func (w lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if w.p.stderr.Len() < 64<<10 {
		w.p.stderr.Write(b)
	}
	return len(b), nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) send(cmd string) error {
	_, err := fmt.Fprintln(p.stdin, cmd)
	return err
}

// expect waits for a line starting with word, skipping others, and returns
// its fields after the word.
func (p *proc) expect(word string) ([]string, error) {
	t := time.NewTimer(procWait)
	defer t.Stop()
	for {
		select {
		case line := <-p.lines:
			f := strings.Fields(line)
			if len(f) > 0 && f[0] == word {
				return f[1:], nil
			}
		case <-p.done:
			// Drain what was printed before the exit.
			for {
				select {
				case line := <-p.lines:
					if f := strings.Fields(line); len(f) > 0 && f[0] == word {
						return f[1:], nil
					}
				default:
					return nil, fmt.Errorf("%s exited while the driver waited for %q: %s", p.name, word, p.errText())
				}
			}
		case <-t.C:
			return nil, fmt.Errorf("%s: no %q within %v: %s", p.name, word, procWait, p.errText())
		}
	}
}

func (p *proc) errText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := strings.TrimSpace(p.stderr.String())
	if s == "" {
		return "(no output on stderr)"
	}
	return s
}

// request sends a command and waits for its answer.
func (p *proc) request(cmd string) ([]string, error) {
	if err := p.send(cmd); err != nil {
		return nil, fmt.Errorf("%s: %w", p.name, err)
	}
	return p.expect(cmd)
}

// cpu returns the CPU time the process used so far.
func (p *proc) cpu() (time.Duration, error) {
	if p.external {
		return procCPU(p.pid()), nil
	}
	f, err := p.request("cpu")
	if err != nil {
		return 0, err
	}
	if len(f) != 1 {
		return 0, fmt.Errorf("%s: bad cpu answer %v", p.name, f)
	}
	us, err := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(us) * time.Microsecond, err
}

// memory is what a process reports about its memory, in bytes.
type memory struct {
	rss, hwm int64 // VmRSS, VmHWM
	heap     int64 // Go heap in use
	live     int64 // Go heap after a collection
}

func (p *proc) memory() (memory, error) {
	if p.external {
		rss, hwm := procStatus(p.pid())
		return memory{rss: rss << 10, hwm: hwm << 10, heap: -1, live: -1}, nil
	}
	f, err := p.request("rss")
	if err != nil {
		return memory{}, err
	}
	if len(f) != 4 {
		return memory{}, fmt.Errorf("%s: bad rss answer %v", p.name, f)
	}
	v := make([]int64, 4)
	for i := range f {
		if v[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return memory{}, err
		}
	}
	return memory{rss: v[0] << 10, hwm: v[1] << 10, heap: v[2], live: v[3]}, nil
}

// stop asks the process to quit and waits a little, then kills it.
func (p *proc) stop() {
	if p.external {
		p.terminate()
		return
	}
	_ = p.send("quit")
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.kill()
	}
}

func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// procs is a set of role processes.
type procs []*proc

// cpu is the CPU used by all of them.
func (ps procs) cpu() (time.Duration, error) {
	var total time.Duration
	for _, p := range ps {
		c, err := p.cpu()
		if err != nil {
			return 0, err
		}
		total += c
	}
	return total, nil
}

func (ps procs) stop() {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
}

// ctxSwitches sums the voluntary and involuntary context switches of every
// thread of a process: each one is a thread going to sleep or being
// preempted, the cost a hop between processes pays beyond its CPU work.
func ctxSwitches(pid int) int64 {
	dirs, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var n int64
	for _, d := range dirs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, d.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				x, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += x
			}
		}
	}
	return n
}

// ctxSwitches of the driver and every process.
func (ps procs) ctxSwitches() int64 {
	n := ctxSwitches(os.Getpid())
	for _, p := range ps {
		n += ctxSwitches(p.pid())
	}
	return n
}
