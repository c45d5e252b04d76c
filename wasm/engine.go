package wasm

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

const (
	// DefaultMemoryLimit is a module's memory limit without
	// WithMemoryLimit: 128 MiB.
	DefaultMemoryLimit = 128 << 20
	// DefaultMaxMessageSize bounds an answer without WithMaxMessageSize:
	// 4 MiB, what a classic plugin may send over ttrpc.
	DefaultMaxMessageSize = 4 << 20
	// pageSize is WebAssembly's memory page.
	pageSize = 64 << 10
	// maxSleep is the longest a module's sleep blocks before it returns to
	// the module, where a done context closes it.
	maxSleep = time.Millisecond
	// DefaultInitTimeout bounds a module's initialization without
	// WithInitTimeout.
	DefaultInitTimeout = 5 * time.Second
)

// Option configures an Engine; pass options to NewEngine.
type Option func(*options)

// options are what Options record.
type options struct {
	memoryLimit uint64
	maxMessage  uint32
	log         *slog.Logger
	cacheDir    string
	initTimeout time.Duration
}

// WithInitTimeout bounds a module's initialization at load, its
// "_initialize" and "plugin_api_version" (DefaultInitTimeout): a module
// that loops there is stopped. Compilation is the host's work and is not
// bounded by it.
func WithInitTimeout(d time.Duration) Option {
	return func(o *options) { o.initTimeout = d }
}

// WithMemoryLimit sets each module's memory limit in bytes
// (DefaultMemoryLimit), rounded up to whole 64 KiB pages; at most 4 GiB.
func WithMemoryLimit(bytes uint64) Option {
	return func(o *options) { o.memoryLimit = bytes }
}

// WithMaxMessageSize bounds an answer a module may return
// (DefaultMaxMessageSize): a larger one fails its call with
// RESOURCE_EXHAUSTED.
func WithMaxMessageSize(bytes uint32) Option {
	return func(o *options) { o.maxMessage = bytes }
}

// WithLogger sets the log that modules' log calls, stdout and stderr go
// to, each line with the module's "plugin" attribute (default, and for
// nil: slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.log = l }
}

// WithCacheDir keeps compiled modules in dir, so that a module is compiled
// once across restarts (default: in memory only, for the engine's life).
// dir is created with mode 0700 when missing; NewEngine refuses one that
// others may write, since it holds machine code the engine runs.
func WithCacheDir(dir string) Option {
	return func(o *options) { o.cacheDir = dir }
}

// Engine loads modules: it holds their options and the compilation cache
// they share (a module loaded twice is compiled once). It starts no
// goroutine; Close releases the cache. An Engine is safe for concurrent
// use.
type Engine struct {
	opts  options
	cache wazero.CompilationCache
	// slots bounds the compilations that run at once (GOMAXPROCS): one
	// takes many times the module's size in memory while it runs.
	slots chan struct{}

	mu      sync.Mutex
	plugins map[*Plugin]struct{}
	closed  bool
	// turns serialize the compilations of each module (by the SHA-256 of
	// its code), so that copies loaded at once are compiled once: the
	// first compiles, the others wait for it and find the code in the
	// cache. It holds every module the engine compiled or is compiling.
	turns map[moduleKey]*compileTurn
}

// moduleKey names a module by its code's SHA-256.
type moduleKey = [sha256.Size]byte

// compileTurn is the turn to compile one module: a token held while
// compiling, and whether the module was compiled.
type compileTurn struct {
	token    chan struct{}
	compiled atomic.Bool
}

// NewEngine creates an engine. It fails for invalid options.
func NewEngine(opts ...Option) (*Engine, error) {
	o := options{memoryLimit: DefaultMemoryLimit, maxMessage: DefaultMaxMessageSize, initTimeout: DefaultInitTimeout}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.memoryLimit == 0 || o.memoryLimit > 1<<32 {
		return nil, fmt.Errorf("wasm: WithMemoryLimit: %d bytes is not in (0, 4 GiB]", o.memoryLimit)
	}
	if o.maxMessage == 0 || o.maxMessage >= 1<<31 {
		return nil, fmt.Errorf("wasm: WithMaxMessageSize: %d bytes is not in (0, 2 GiB)", o.maxMessage)
	}
	if o.initTimeout <= 0 {
		return nil, fmt.Errorf("wasm: WithInitTimeout: %v is not positive", o.initTimeout)
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	e := &Engine{opts: o, plugins: map[*Plugin]struct{}{}, slots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0))),
		turns: map[moduleKey]*compileTurn{}}
	if o.cacheDir != "" {
		// The cache holds machine code that the engine runs: only its
		// owner may write it.
		if err := os.MkdirAll(o.cacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("wasm: compilation cache: %w", err)
		}
		fi, err := os.Stat(o.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache: %w", err)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return nil, fmt.Errorf("wasm: compilation cache %s is writable by others (mode %#o): it holds code nrid runs", o.cacheDir, fi.Mode().Perm())
		}
		c, err := wazero.NewCompilationCacheWithDir(o.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache in %s: %w", o.cacheDir, err)
		}
		e.cache = c
	} else {
		e.cache = wazero.NewCompilationCache()
	}
	return e, nil
}

// MemoryLimit returns each module's memory limit in bytes (whole pages).
func (e *Engine) MemoryLimit() uint64 { return uint64(e.pages()) * pageSize }

// pages is the memory limit in pages.
func (e *Engine) pages() uint32 {
	return uint32((e.opts.memoryLimit + pageSize - 1) / pageSize)
}

// Close closes every module the engine loaded and releases its cache.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	plugins := make([]*Plugin, 0, len(e.plugins))
	for p := range e.plugins {
		plugins = append(plugins, p)
	}
	e.mu.Unlock()
	var errs []error
	for _, p := range plugins {
		errs = append(errs, p.Close(ctx))
	}
	errs = append(errs, e.cache.Close(ctx))
	return errors.Join(errs...)
}

// Load reads the module at path, compiles and instantiates it in a
// runtime of its own, and checks that it exports upstream's plugin ABI.
// name (the plugin's "NN-name") labels its log lines. ctx cancels the load;
// the module's initialization is bounded by WithInitTimeout too (a module
// that loops in its initialization is stopped).
func (e *Engine) Load(ctx context.Context, path, name string) (*Plugin, error) {
	code, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wasm: %w", err)
	}
	return e.LoadBytes(ctx, code, name)
}

// LoadBytes is Load for a module's bytes.
func (e *Engine) LoadBytes(ctx context.Context, code []byte, name string) (*Plugin, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, errors.New("wasm: the engine is closed")
	}
	log := e.opts.log.With("plugin", name)
	cfg := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(e.pages()).
		WithCompilationCache(e.cache)
	// A runtime's own context only carries values (none here): each call's
	// context is what stops the module.
	rt := wazero.NewRuntimeWithConfig(context.WithoutCancel(ctx), cfg)
	fail := func(err error) (*Plugin, error) {
		_ = rt.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	p := &Plugin{name: name, log: log, engine: e, runtime: rt, turn: make(chan struct{}, 1), done: make(chan struct{}),
		maxMessage: e.opts.maxMessage, logs: newLogLimiter(time.Now)}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return fail(fmt.Errorf("wasm: WASI: %w", err))
	}
	if _, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(p.hostLog), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI64}).
		WithParameterNames("offset", "size").Export("log").Instantiate(ctx); err != nil {
		return fail(fmt.Errorf("wasm: host functions: %w", err))
	}
	compiled, err := e.compile(ctx, rt, code)
	if err != nil {
		return fail(fmt.Errorf("wasm: compiling %s: %w", name, err))
	}
	out, errOut := p.lineWriter("stdout", slog.LevelInfo), p.lineWriter("stderr", slog.LevelWarn)
	mc := wazero.NewModuleConfig().
		WithName(name).
		WithStartFunctions("_initialize").
		WithStdout(out).WithStderr(errOut).
		WithSysWalltime().WithSysNanotime().
		WithNanosleep(func(ns int64) { time.Sleep(min(time.Duration(ns), maxSleep)) }).
		WithRandSource(rand.Reader)
	ictx, cancel := context.WithTimeout(ctx, e.opts.initTimeout)
	defer cancel()
	mod, err := rt.InstantiateModule(ictx, compiled, mc)
	if err != nil {
		return fail(fmt.Errorf("wasm: initializing %s: %w", name, callError(ictx, err)))
	}
	p.mod = mod
	if err := p.bind(ictx); err != nil {
		return fail(fmt.Errorf("wasm: %s: %w", name, err))
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return fail(errors.New("wasm: the engine is closed"))
	}
	e.plugins[p] = struct{}{}
	e.mu.Unlock()
	return p, nil
}

// compile compiles code in rt: once per module for the engine's loads,
// however many load it at once (the first compiles, the others wait for
// their turn and find it in the cache), and at most GOMAXPROCS modules at
// a time. ctx cancels the wait.
func (e *Engine) compile(ctx context.Context, rt wazero.Runtime, code []byte) (wazero.CompiledModule, error) {
	key := sha256.Sum256(code)
	e.mu.Lock()
	t := e.turns[key]
	if t == nil {
		t = &compileTurn{token: make(chan struct{}, 1)}
		e.turns[key] = t
	}
	e.mu.Unlock()
	select {
	case t.token <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-t.token }()
	if t.compiled.Load() {
		return rt.CompileModule(ctx, code) // from the cache
	}
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-e.slots }()
	m, err := rt.CompileModule(ctx, code)
	if err == nil {
		t.compiled.Store(true)
	}
	return m, err
}

// forget drops p from the engine's modules.
func (e *Engine) forget(p *Plugin) {
	e.mu.Lock()
	delete(e.plugins, p)
	e.mu.Unlock()
}
