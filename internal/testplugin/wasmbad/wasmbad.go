// Command wasmbad is a misbehaving WebAssembly NRI plugin for tests of WASM
// hosts, built for upstream NRI's WASM ABI (github.com/containerd/nri/pkg/api)
// with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o 50-wasmbad ./internal/testplugin/wasmbad
//
// or internal/wasmbuild. Its configuration string, JSON
// {"mode": "...", "alloc_mib": N, "path": "...", "addr": "..."} (unknown keys
// are an error), chooses what it does in CreateContainer, the one event it
// subscribes to:
//
//   - "ok" (the default): answers env WASMBAD=ok.
//   - "loop": spins forever. "loop-configure": spins forever in Configure.
//   - "crash": panics. "exit": calls os.Exit(3).
//   - "alloc": allocates alloc_mib MiB, touches every page, keeps the memory
//     for the life of the module, and answers env ALLOCATED=<alloc_mib>.
//   - "fs": tries os.ReadFile(path), os.ReadDir("/") and
//     os.WriteFile(path+".w") and answers env FS_READ ("ok:<content>" or
//     "err:<error>"), FS_LIST ("ok:<names, comma-separated>" or "err:..."),
//     FS_WRITE ("ok" or "err:..."), ENV_COUNT (len(os.Environ())) and
//     ENV_SECRET (os.Getenv("NRI_TEST_SECRET")).
//   - "net": tries net.Dial("tcp", addr) and answers env NET_DIAL ("ok" or
//     "err:<error>").
//   - "logflood": calls the host's Log once with a 1 MiB message and 1000
//     times with short ones, writes 64 KiB to stdout and to stderr, and
//     answers env FLOODED=1.
//   - "bigerror": fails with an error message 1 MiB long.
//
// Every env value answered is clipped to 200 bytes (and made valid UTF-8).
// Every other request gets an empty response.
//
// The logic in this file has no build constraint, so that its tests run
// natively; main_wasip1.go registers it with the WASM ABI.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/containerd/nri/pkg/api"
)

const (
	// maxValue is the longest env value answered, in bytes.
	maxValue = 200
	// mib is a mebibyte.
	mib = 1 << 20
	// pageSize is the stride at which alloc touches its memory.
	pageSize = 4096
	// floodLines is how many short lines logflood logs.
	floodLines = 1000
	// floodOutput is how much logflood writes to stdout and to stderr.
	floodOutput = 64 << 10
	// exitCode is the exit status of mode exit.
	exitCode = 3
)

// Modes.
const (
	modeOK            = "ok"
	modeLoop          = "loop"
	modeLoopConfigure = "loop-configure"
	modeCrash         = "crash"
	modeExit          = "exit"
	modeAlloc         = "alloc"
	modeFS            = "fs"
	modeNet           = "net"
	modeLogFlood      = "logflood"
	modeBigError      = "bigerror"
)

// logFunc writes one log line at a level: the host's Log function in WASM,
// a recorder in tests.
type logFunc func(ctx context.Context, level api.LogRequest_Level, msg string)

// config is the plugin's configuration.
type config struct {
	// Mode chooses the misbehaviour; empty is "ok".
	Mode string `json:"mode"`
	// AllocMiB is how many MiB mode alloc allocates.
	AllocMiB int `json:"alloc_mib"`
	// Path is the file mode fs reads (and, with ".w" appended, writes).
	Path string `json:"path"`
	// Addr is the TCP address mode net dials.
	Addr string `json:"addr"`
}

// sys is what the plugin does to its process, replaced in tests.
type sys struct {
	log    logFunc
	stdout io.Writer
	stderr io.Writer
	exit   func(code int)
}

// bad is the plugin. NRI calls it one request at a time.
type bad struct {
	nop
	sys sys
	cfg config
	// held keeps the memory mode alloc allocated.
	held [][]byte
	// spins counts iterations of the endless loops; the store keeps the
	// compiler from removing them.
	spins uint64
}

var _ api.Plugin = (*bad)(nil)

// newBad returns the plugin in mode ok.
func newBad(s sys) *bad {
	return &bad{sys: s, cfg: config{Mode: modeOK}}
}

// parseConfig parses and validates a configuration string; an empty or
// blank one is mode ok.
func parseConfig(s string) (config, error) {
	var cfg config
	if strings.TrimSpace(s) != "" {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return config{}, fmt.Errorf("invalid configuration: %w", err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return config{}, errors.New("invalid configuration: data after the JSON object")
		}
	}
	switch cfg.Mode {
	case "":
		cfg.Mode = modeOK
	case modeOK, modeLoop, modeLoopConfigure, modeCrash, modeExit, modeAlloc, modeFS, modeNet,
		modeLogFlood, modeBigError:
	default:
		return config{}, fmt.Errorf("invalid configuration: unknown mode %q", cfg.Mode)
	}
	if cfg.AllocMiB < 0 {
		return config{}, fmt.Errorf("invalid configuration: alloc_mib %d", cfg.AllocMiB)
	}
	return cfg, nil
}

// Configure takes the mode and subscribes to CreateContainer; in mode
// loop-configure it never returns.
func (b *bad) Configure(ctx context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	cfg, err := parseConfig(req.GetConfig())
	if err != nil {
		return nil, err
	}
	b.cfg = cfg
	b.sys.log(ctx, api.LogRequest_LEVEL_INFO, "wasmbad configured, mode "+cfg.Mode)
	if cfg.Mode == modeLoopConfigure {
		b.spin()
	}
	events := api.EventMask(0)
	events.Set(api.Event_CREATE_CONTAINER)
	return &api.ConfigureResponse{Events: int32(events)}, nil
}

// CreateContainer misbehaves as the mode says.
func (b *bad) CreateContainer(ctx context.Context, _ *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	adjust := &api.ContainerAdjustment{}
	env := func(k, v string) { adjust.AddEnv(k, clip(v)) }

	switch b.cfg.Mode {
	case modeLoop:
		b.spin()
	case modeCrash:
		panic("wasmbad: crash requested")
	case modeExit:
		b.sys.exit(exitCode)
	case modeAlloc:
		b.alloc(b.cfg.AllocMiB)
		env("ALLOCATED", strconv.Itoa(b.cfg.AllocMiB))
	case modeFS:
		env("FS_READ", tryRead(b.cfg.Path))
		env("FS_LIST", tryList("/"))
		env("FS_WRITE", tryWrite(b.cfg.Path+".w"))
		env("ENV_COUNT", strconv.Itoa(len(os.Environ())))
		env("ENV_SECRET", os.Getenv("NRI_TEST_SECRET"))
	case modeNet:
		env("NET_DIAL", tryDial(b.cfg.Addr))
	case modeLogFlood:
		b.flood(ctx)
		env("FLOODED", "1")
	case modeBigError:
		return nil, errors.New(strings.Repeat("E", mib))
	default:
		env("WASMBAD", "ok")
	}
	return &api.CreateContainerResponse{Adjust: adjust}, nil
}

// spin loops forever, storing to the plugin so that the loop has an effect.
func (b *bad) spin() {
	for {
		b.spins++
	}
}

// alloc allocates n MiB in 1 MiB blocks, writes to every page of them, and
// keeps them.
func (b *bad) alloc(n int) {
	for range n {
		block := make([]byte, mib)
		for i := 0; i < len(block); i += pageSize {
			block[i] = 1
		}
		b.held = append(b.held, block)
	}
}

// flood logs one 1 MiB line and floodLines short ones, and writes
// floodOutput bytes to stdout and to stderr.
func (b *bad) flood(ctx context.Context) {
	b.sys.log(ctx, api.LogRequest_LEVEL_INFO, strings.Repeat("L", mib))
	for i := range floodLines {
		b.sys.log(ctx, api.LogRequest_LEVEL_INFO, "wasmbad flood "+strconv.Itoa(i))
	}
	out := []byte(strings.Repeat("o", floodOutput-1) + "\n")
	_, _ = b.sys.stdout.Write(out)
	_, _ = b.sys.stderr.Write(out)
}

// tryRead reads the file at path.
func tryRead(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "err:" + err.Error()
	}
	return "ok:" + string(data)
}

// tryList lists the directory at path.
func tryList(path string) string {
	entries, err := os.ReadDir(path)
	if err != nil {
		return "err:" + err.Error()
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return "ok:" + strings.Join(names, ",")
}

// tryWrite writes a file at path.
func tryWrite(path string) string {
	if err := os.WriteFile(path, []byte("written by wasmbad\n"), 0o644); err != nil {
		return "err:" + err.Error()
	}
	return "ok"
}

// tryDial opens a TCP connection to addr and closes it.
func tryDial(addr string) string {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return "err:" + err.Error()
	}
	_ = conn.Close()
	return "ok"
}

// clip makes s valid UTF-8 and cuts it to at most maxValue bytes, at a rune
// boundary.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= maxValue {
		return s
	}
	n := maxValue
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
