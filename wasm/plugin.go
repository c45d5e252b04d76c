package wasm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// APIVersion is the plugin ABI version a module must report from
// plugin_api_version.
const APIVersion = 1

// Methods are the Plugin methods a module exports, by their classic
// (ttrpc) names, with the function each is exported as.
var methods = map[string]string{
	"Configure":                   "plugin_configure",
	"Synchronize":                 "plugin_synchronize",
	"Shutdown":                    "plugin_shutdown",
	"RunPodSandbox":               "plugin_run_pod_sandbox",
	"UpdatePodSandbox":            "plugin_update_pod_sandbox",
	"PostUpdatePodSandbox":        "plugin_post_update_pod_sandbox",
	"StopPodSandbox":              "plugin_stop_pod_sandbox",
	"RemovePodSandbox":            "plugin_remove_pod_sandbox",
	"CreateContainer":             "plugin_create_container",
	"PostCreateContainer":         "plugin_post_create_container",
	"StartContainer":              "plugin_start_container",
	"PostStartContainer":          "plugin_post_start_container",
	"UpdateContainer":             "plugin_update_container",
	"PostUpdateContainer":         "plugin_post_update_container",
	"StopContainer":               "plugin_stop_container",
	"RemoveContainer":             "plugin_remove_container",
	"StateChange":                 "plugin_state_change",
	"ValidateContainerAdjustment": "plugin_validate_container_adjustment",
}

// errorBit marks an answer's size as that of an error message.
const errorBit = 1 << 31

// Plugin is one loaded module. Its methods are safe for concurrent use;
// the module runs one call at a time.
type Plugin struct {
	name       string
	log        *slog.Logger
	engine     *Engine
	runtime    wazero.Runtime
	mod        api.Module
	maxMessage uint32
	logs       *logLimiter

	malloc, free api.Function
	fns          map[string]api.Function

	turn      chan struct{} // holds a token while a call runs
	done      chan struct{} // closed once the module is dead
	closeOnce sync.Once
	mu        sync.Mutex
	why       error // why the module died
}

// bind finds the module's exports and checks its ABI version.
func (p *Plugin) bind(ctx context.Context) error {
	fn := func(name string, params, results int) (api.Function, error) {
		f := p.mod.ExportedFunction(name)
		if f == nil {
			return nil, fmt.Errorf("%s is not exported: not a module built against pkg/api (api.RegisterPlugin)", name)
		}
		d := f.Definition()
		if len(d.ParamTypes()) != params || len(d.ResultTypes()) != results {
			return nil, fmt.Errorf("%s has %d parameters and %d results, not %d and %d", name, len(d.ParamTypes()), len(d.ResultTypes()), params, results)
		}
		return f, nil
	}
	version, err := fn("plugin_api_version", 0, 1)
	if err != nil {
		return err
	}
	res, err := version.Call(ctx)
	if err != nil {
		return fmt.Errorf("plugin_api_version: %w", callError(ctx, err))
	}
	if res[0] != APIVersion {
		return fmt.Errorf("API version mismatch, host: %d, plugin: %d", APIVersion, res[0])
	}
	if p.malloc, err = fn("malloc", 1, 1); err != nil {
		return err
	}
	if p.free, err = fn("free", 1, 0); err != nil {
		return err
	}
	p.fns = make(map[string]api.Function, len(methods))
	for m, export := range methods {
		f, err := fn(export, 2, 1)
		if err != nil {
			return err
		}
		p.fns[m] = f
	}
	return nil
}

// Name returns the name the plugin was loaded with.
func (p *Plugin) Name() string { return p.name }

// Done is closed once the module is dead: it trapped, exited, was stopped
// by a done context, or was closed.
func (p *Plugin) Done() <-chan struct{} { return p.done }

// Err returns why the module died (nil while it lives).
func (p *Plugin) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.why
}

// MemorySize returns the size of the module's memory in bytes (0 once it
// is dead).
func (p *Plugin) MemorySize() uint64 {
	select {
	case <-p.done:
		return 0
	default:
	}
	if m := p.mod.Memory(); m != nil {
		return uint64(m.Size())
	}
	return 0
}

// Close closes the module. A call in progress fails.
func (p *Plugin) Close(ctx context.Context) error {
	p.die(errors.New("the plugin was closed"))
	return p.runtime.Close(ctx)
}

// die marks the module dead for why, once.
func (p *Plugin) die(why error) {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.why = why
		p.mu.Unlock()
		close(p.done)
		p.engine.forget(p)
	})
}

// Call calls method (a classic Plugin method name: "Configure",
// "CreateContainer", ...) with the request encoded as req and returns a
// copy of the answer's encoding. Errors are gRPC statuses: the module's
// own error message (clipped) as UNKNOWN, DEADLINE_EXCEEDED or CANCELLED
// when ctx ended the call (the module is then dead), UNAVAILABLE for a
// dead module (trapped, exited, closed), RESOURCE_EXHAUSTED for an answer
// over the maximum message size, INTERNAL for an answer outside the
// module's memory, UNIMPLEMENTED for an unknown method.
func (p *Plugin) Call(ctx context.Context, method string, req []byte) ([]byte, error) {
	fn, ok := p.fns[method]
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "wasm: no plugin method %s", untrusted.Quote(method))
	}
	select {
	case p.turn <- struct{}{}:
	case <-p.done:
		return nil, p.deadErr()
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	defer func() { <-p.turn }()
	select {
	case <-p.done:
		return nil, p.deadErr()
	default:
	}
	// A failure that ends the module marks it dead in call (fatal).
	return p.call(ctx, fn, req)
}

// deadErr is the error of a call to a dead module.
func (p *Plugin) deadErr() error {
	return status.Errorf(codes.Unavailable, "wasm plugin %s is not running: %s", p.name, status.Convert(p.Err()).Message())
}

// call runs one call; the caller holds the turn.
func (p *Plugin) call(ctx context.Context, fn api.Function, req []byte) ([]byte, error) {
	var ptr uint64
	if len(req) > 0 {
		res, err := p.malloc.Call(ctx, uint64(len(req)))
		if err != nil {
			return nil, p.fatal(ctx, err)
		}
		ptr = res[0]
		if !p.mod.Memory().Write(uint32(ptr), req) {
			return nil, p.fatal(ctx, fmt.Errorf("malloc returned %d for %d bytes, out of its memory of %d bytes", ptr, len(req), p.mod.Memory().Size()))
		}
	}
	res, err := fn.Call(ctx, ptr, uint64(len(req)))
	if err != nil {
		return nil, p.fatal(ctx, err)
	}
	rptr, rsize := uint32(res[0]>>32), uint32(res[0])
	isErr := rsize&errorBit != 0
	rsize &^= errorBit
	var out []byte
	if rsize > p.maxMessage {
		err = status.Errorf(codes.ResourceExhausted, "wasm plugin %s answered %d bytes, over the maximum message size of %d", p.name, rsize, p.maxMessage)
	} else if b, ok := p.mod.Memory().Read(rptr, rsize); !ok {
		err = status.Errorf(codes.Internal, "wasm plugin %s answered %d bytes at %d, out of its memory of %d bytes", p.name, rsize, rptr, p.mod.Memory().Size())
	} else if isErr {
		err = status.Error(codes.Unknown, untrusted.Cut(string(b), maxErrorMessage))
	} else {
		out = append([]byte(nil), b...) // the module's memory is reused
	}
	// The module's buffers are freed once their bytes are copied, as
	// upstream's host does: the request's, then the answer's.
	if ptr != 0 {
		if _, ferr := p.free.Call(ctx, ptr); ferr != nil {
			return nil, p.fatal(ctx, ferr)
		}
	}
	if rptr != 0 {
		if _, ferr := p.free.Call(ctx, uint64(rptr)); ferr != nil {
			return nil, p.fatal(ctx, ferr)
		}
	}
	return out, err
}

// maxErrorMessage bounds a module's error message.
const maxErrorMessage = 1 << 10

// fatal makes a failed call's error: the module is dead after it (a trap
// leaves a Go module's state undefined), so it is closed.
func (p *Plugin) fatal(ctx context.Context, err error) error {
	err = callError(ctx, err)
	p.die(err)
	_ = p.mod.Close(context.WithoutCancel(ctx))
	return err
}

// callError maps a failed call's error to a gRPC status.
func callError(ctx context.Context, err error) error {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return status.Error(codes.DeadlineExceeded, "wasm: the call's deadline passed: the module was stopped")
		case sys.ExitCodeContextCanceled:
			return status.Error(codes.Canceled, "wasm: the call was cancelled: the module was stopped")
		}
		return status.Errorf(codes.Unavailable, "wasm: the module exited with code %d", exit.ExitCode())
	}
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	// wazero's error says what trapped, then the module's stack trace
	// (a Go module prints its own to stderr, which is logged).
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return status.Errorf(codes.Unavailable, "wasm: the module crashed: %s", untrusted.Cut(msg, maxErrorMessage))
}
