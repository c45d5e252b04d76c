// Package config is nri-grpc's configuration, nrid's and that of every
// embedder of package node (the drop-in for containerd's pkg/adaptation
// reads the same schema): one strict TOML file (unknown keys
// are errors naming the key and its line), defaults that work without a
// file, and checks that name the offending key and line. Every key is
// documented in deploy/nrid.toml.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/nri-grpc/nri-grpc/policy"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

// Defaults.
const (
	// DefaultSocket is nrid's unix socket.
	DefaultSocket = "/var/run/nri/nri-grpc.sock"
	// DefaultSocketMode lets only the socket's owner connect.
	DefaultSocketMode = 0o600
	// DefaultStopTimeout bounds a graceful stop.
	DefaultStopTimeout = 10 * time.Second
	// DefaultRegisterRate and DefaultRegisterBurst limit RegisterPlugin
	// calls per identity.
	DefaultRegisterRate  = 5.0
	DefaultRegisterBurst = 10
	// DefaultRestartGrace bounds the restart gate (server.state_dir).
	DefaultRestartGrace = 10 * time.Second
)

// Config is one nri-grpc configuration (nrid.toml's schema). Some
// sections are nrid's only (Bridge, the restart gate's keys of Server):
// other embedders ignore them.
type Config struct {
	// Server: sockets, timeouts and limits.
	Server Server `toml:"server"`
	// Runtime: whether a runtime side must be attached before nrid is
	// healthy, and the runtime identity plugins see until one attaches.
	Runtime Runtime `toml:"runtime"`
	// TCP: the optional TLS listener.
	TCP TCP `toml:"tcp"`
	// Log: level and format.
	Log Log `toml:"log"`
	// Observability: tracing, metrics and redaction.
	Observability Observability `toml:"observability"`
	// Validator is the default validator (validate.Config).
	Validator validate.Config `toml:"validator"`
	// Launch: pre-launched gRPC plugins.
	Launch Launch `toml:"launch"`
	// Wasm: the sandbox of WASM plugins.
	Wasm Wasm `toml:"wasm"`
	// Bridge: the ttrpc bridge (see docs/bridge.md).
	Bridge Bridge `toml:"bridge"`
	// Plugins are the operator's per-plugin policy ([[plugin]]).
	Plugins []policy.PluginRule `toml:"plugin"`
	// Policy is the authorization policy ([[policy]]).
	Policy []policy.Rule `toml:"policy"`
}

// Server configures nrid's unix socket and the server core.
type Server struct {
	// Socket is the unix socket nrid serves on.
	Socket string `toml:"socket"`
	// SocketMode is the socket's mode ("0600").
	SocketMode FileMode `toml:"socket_mode"`
	// SocketGroup, when set, is the socket's group (name or number).
	SocketGroup string `toml:"socket_group"`
	// SocketDirMode is the mode of the socket's directory when nrid creates
	// it; when set, it is also applied to an existing directory.
	SocketDirMode FileMode `toml:"socket_dir_mode"`
	// PluginSocketDir is the only directory unix plugin endpoints may be in.
	PluginSocketDir string `toml:"plugin_socket_dir"`
	// PluginSocketDirMode is the plugin socket directory's mode, as for
	// the socket's directory; plugins that are not root need write access
	// to create their sockets there.
	PluginSocketDirMode FileMode `toml:"plugin_socket_dir_mode"`
	// PluginSocketDirGroup, when set, is the plugin socket directory's
	// group (name or number).
	PluginSocketDirGroup string `toml:"plugin_socket_dir_group"`
	// NodeName is sent to plugins (default: the host name).
	NodeName string `toml:"node_name"`
	// RegistrationTimeout bounds a registration (server.WithRegistrationTimeout).
	RegistrationTimeout Duration `toml:"registration_timeout"`
	// RequestTimeout is a plugin call's default budget (server.WithRequestTimeout).
	RequestTimeout Duration `toml:"request_timeout"`
	// MaxTimeout caps the budget a plugin may ask for (server.WithMaxTimeout).
	MaxTimeout Duration `toml:"max_timeout"`
	// ShutdownGrace is how long plugins get after Shutdown (server.WithShutdownGrace).
	ShutdownGrace Duration `toml:"shutdown_grace"`
	// StopTimeout bounds a graceful stop after SIGTERM or SIGINT.
	StopTimeout Duration `toml:"stop_timeout"`
	// MaxMessageSize is the largest message nrid sends or receives.
	MaxMessageSize int `toml:"max_message_size"`
	// MaxConcurrentCalls caps the concurrency granted to plugins.
	MaxConcurrentCalls int `toml:"max_concurrent_calls"`
	// RegisterRate limits RegisterPlugin calls per identity, per second
	// (0 disables the limit).
	RegisterRate float64 `toml:"register_rate"`
	// RegisterBurst is the burst RegisterRate allows.
	RegisterBurst int `toml:"register_burst"`
	// StateDir is where nrid keeps what must survive its restarts: the
	// plugins that were registered (the restart gate). Empty: nothing is
	// kept, and there is no restart gate.
	StateDir string `toml:"state_dir"`
	// RestartGrace bounds the restart gate: after a restart nrid waits this
	// long at most for the plugins that were registered before it to
	// register again, before it attaches to the runtime (the bridge) and
	// reports SERVING. 0 disables the gate.
	RestartGrace Duration `toml:"restart_grace"`
	// NotReady is what a plugin's NOT_READY status means for its events
	// when its [[plugin]] entry does not say: "wait", "fail", "skip", or ""
	// (wait for required and validating plugins, skip the others).
	NotReady string `toml:"not_ready"`
	// MinResyncInterval is the least time between two resynchronizations
	// one plugin asks for (RequestResync); "0s": none.
	MinResyncInterval Duration `toml:"min_resync_interval"`
}

// Runtime configures the runtime side.
type Runtime struct {
	// Required keeps health NOT_SERVING until a runtime is attached and
	// synchronized.
	Required bool `toml:"required"`
	// Name is the runtime name plugins see in Configure until a runtime
	// attaches with its own.
	Name string `toml:"name"`
	// Version is the runtime version plugins see with Name.
	Version string `toml:"version"`
}

// TCP configures the optional TCP listener, always TLS.
type TCP struct {
	// Address to listen on ("127.0.0.1:7443"); empty disables TCP.
	Address string `toml:"address"`
	// CertFile is the server's certificate (PEM); the server also dials
	// TCP plugin endpoints with it.
	CertFile string `toml:"cert_file"`
	// KeyFile is CertFile's private key (PEM).
	KeyFile string `toml:"key_file"`
	// ClientCAFile verifies client certificates (PEM bundle).
	ClientCAFile string `toml:"client_ca_file"`
	// ClientAuth is "require" (every client presents a certificate) or
	// "optional" (clients without one must present a bearer token).
	ClientAuth string `toml:"client_auth"`
	// TokensFile holds bearer tokens, "name token" per line.
	TokensFile string `toml:"tokens_file"`
}

// Log configures nrid's log.
type Log struct {
	// Level is "debug", "info", "warn" or "error".
	Level string `toml:"level"`
	// Format is "text" or "json".
	Format string `toml:"format"`
}

// Observability configures tracing, metrics and redaction.
type Observability struct {
	// Tracing is "off", "stdout" or "otlp".
	Tracing string `toml:"tracing"`
	// OTLPEndpoint is the OTLP/gRPC collector ("localhost:4317").
	OTLPEndpoint string `toml:"otlp_endpoint"`
	// MetricsAddress, when set, serves Prometheus metrics on /metrics and
	// the HTTP health probes /readyz and /livez (internal/probe).
	MetricsAddress string `toml:"metrics_address"`
	// RedactValues replaces env and annotation values in dispatch records,
	// logs and trace attributes.
	RedactValues bool `toml:"redact_values"`
}

// Launch configures the pre-launched gRPC plugins.
type Launch struct {
	// PluginDir holds executables named "NN-name"; empty disables launching.
	PluginDir string `toml:"plugin_dir"`
	// ConfigDir holds their configuration ("NN-name.conf" or "name.conf").
	ConfigDir string `toml:"config_dir"`
}

// Bridge configures the ttrpc bridge (see docs/bridge.md): each side is
// enabled by setting its socket.
type Bridge struct {
	// RuntimeSocket is the runtime's classic NRI socket nrid attaches to
	// as one plugin (the runtime side).
	RuntimeSocket string `toml:"runtime_socket"`
	// PluginSocket is the classic-plugin socket nrid serves for v1alpha1
	// plugins (the plugin side).
	PluginSocket string `toml:"plugin_socket"`
	// PluginName is the name the bridge registers with the runtime under
	// ("": bridge.DefaultPluginName).
	PluginName string `toml:"plugin_name"`
	// PluginIndex is the bridge's index with the runtime ("":
	// bridge.DefaultPluginIndex).
	PluginIndex string `toml:"plugin_index"`
	// ClassicPluginDir holds classic plugins launched the classic way
	// (socketpair on fd 3).
	ClassicPluginDir string `toml:"classic_plugin_dir"`
	// ClassicConfigDir holds their configuration ("NN-name.conf" then
	// "name.conf").
	ClassicConfigDir string `toml:"classic_config_dir"`
}

// Wasm configures the sandbox of WASM plugins: the modules of
// bridge.classic_plugin_dir in nrid, of the runtime's plugin path in the
// drop-in (docs/wasm.md).
type Wasm struct {
	// MemoryLimit is each module's memory limit in bytes (0:
	// wasm.DefaultMemoryLimit, 128 MiB).
	MemoryLimit int64 `toml:"memory_limit"`
	// CacheDir keeps compiled modules across restarts (mode 0700, refused
	// when others may write it); "": nrid uses server.state_dir/wasm-cache
	// when state_dir is set, the drop-in compiles at every start.
	CacheDir string `toml:"cache_dir"`
}

// Configured reports whether any bridge key is set.
func (b Bridge) Configured() bool { return b != Bridge{} }

// Default returns the configuration nrid uses without a file.
func Default() *Config {
	return &Config{
		Server: Server{
			Socket:              DefaultSocket,
			SocketMode:          DefaultSocketMode,
			PluginSocketDir:     server.DefaultPluginSocketDir,
			RegistrationTimeout: Duration(server.DefaultRegistrationTimeout),
			RequestTimeout:      Duration(server.DefaultRequestTimeout),
			MaxTimeout:          Duration(time.Minute),
			ShutdownGrace:       Duration(server.DefaultShutdownGrace),
			StopTimeout:         Duration(DefaultStopTimeout),
			MaxMessageSize:      server.DefaultMaxMessageSize,
			MaxConcurrentCalls:  16,
			RegisterRate:        DefaultRegisterRate,
			RegisterBurst:       DefaultRegisterBurst,
			RestartGrace:        Duration(DefaultRestartGrace),
			MinResyncInterval:   Duration(server.DefaultMinResyncInterval),
		},
		TCP:           TCP{ClientAuth: "require"},
		Log:           Log{Level: "info", Format: "text"},
		Observability: Observability{Tracing: "off", RedactValues: true},
	}
}

// Error is an invalid configuration: it names the source, the line and
// column (0 when unknown) and the key.
type Error struct {
	// Source is the file (or the name Parse was given).
	Source string
	// Line is the 1-based line, 0 when unknown.
	Line int
	// Column is the 1-based column, 0 when unknown.
	Column int
	// Key is the TOML path ("server.socket", "policy[1].events[0]").
	Key string
	// Msg says what is wrong.
	Msg string
}

// Error implements error: "source:line:column: key: msg".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Overrides are values from flags; they win over the file. Errors about
// them name the flag.
type Overrides struct {
	Socket          *string // --socket
	PluginSocketDir *string // --plugin-socket-dir
	TCPAddress      *string // --tcp-address
	LogLevel        *string // --log-level
	NodeName        *string // --node-name
	RuntimeRequired *bool   // --runtime-required
}

// apply sets the overridden values and returns the flag of each key.
func (o Overrides) apply(c *Config) map[string]string {
	flags := map[string]string{}
	set := func(dst *string, v *string, key, flag string) {
		if v != nil {
			*dst = *v
			flags[key] = flag
		}
	}
	set(&c.Server.Socket, o.Socket, "server.socket", "--socket")
	set(&c.Server.PluginSocketDir, o.PluginSocketDir, "server.plugin_socket_dir", "--plugin-socket-dir")
	set(&c.TCP.Address, o.TCPAddress, "tcp.address", "--tcp-address")
	set(&c.Log.Level, o.LogLevel, "log.level", "--log-level")
	set(&c.Server.NodeName, o.NodeName, "server.node_name", "--node-name")
	if o.RuntimeRequired != nil {
		c.Runtime.Required = *o.RuntimeRequired
		flags["runtime.required"] = "--runtime-required"
	}
	return flags
}

// Load reads and checks the configuration file at path, then applies the
// overrides. An empty path gives the defaults.
func Load(path string, o Overrides) (*Config, error) {
	if path == "" {
		c := Default()
		return c, c.check(nil, "defaults", o.apply(c))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(data, path, o)
}

// Parse decodes and checks a configuration document named source, then
// applies the overrides. Keys absent from it keep their defaults.
func Parse(data []byte, source string, o Overrides) (*Config, error) {
	c := Default()
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, decodeError(data, source, err)
	}
	// go-toml stores a bare number in a duration as nanoseconds: refuse it.
	idx := indexKeys(data)
	for _, key := range textKeys {
		if e, ok := idx.entries[key]; ok && e.kind != unstable.String {
			return nil, &Error{Source: source, Line: e.line, Column: e.col, Key: key,
				Msg: "must be a string (\"5s\", \"0660\")"}
		}
	}
	if err := c.check(data, source, o.apply(c)); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeError turns go-toml's errors into *Error (several, joined, for
// several unknown keys).
func decodeError(data []byte, source string, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		idx := indexKeys(data)
		var errs []error
		for i := range strict.Errors {
			e := &strict.Errors[i]
			line, col := e.Position()
			key := idx.keyAt(line, col, strings.Join(e.Key(), "."))
			errs = append(errs, &Error{Source: source, Line: line, Column: col, Key: key,
				Msg: fmt.Sprintf("unknown key %q (see deploy/nrid.toml for every key)", lastPart(key))})
		}
		return errors.Join(errs...)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		if len(de.Key()) == 0 {
			return &Error{Source: source, Line: line, Column: col, Msg: "syntax error: " + msg}
		}
		key := indexKeys(data).keyAt(line, col, strings.Join(de.Key(), "."))
		return &Error{Source: source, Line: line, Column: col, Key: key, Msg: msg}
	}
	// go-toml hands a number to a duration or mode's UnmarshalText without
	// a position: find the key whose value is not the string it must be.
	var ve *valueError
	if errors.As(err, &ve) {
		idx := indexKeys(data)
		for _, key := range textKeys {
			if e, ok := idx.entries[key]; ok && e.kind != unstable.String {
				return &Error{Source: source, Line: e.line, Column: e.col, Key: key, Msg: ve.msg}
			}
		}
	}
	return &Error{Source: source, Msg: err.Error()}
}

// textKeys are the keys whose values are strings parsed by UnmarshalText.
var textKeys = []string{
	"server.socket_mode", "server.socket_dir_mode", "server.plugin_socket_dir_mode",
	"server.registration_timeout", "server.request_timeout", "server.max_timeout",
	"server.shutdown_grace", "server.stop_timeout", "server.restart_grace", "server.min_resync_interval",
}

func lastPart(key string) string {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[i+1:]
	}
	return key
}

// check validates the decoded configuration; errors name the key and, with
// the document at hand, its line.
func (c *Config) check(data []byte, source string, flags map[string]string) error {
	fail := func(key, format string, args ...any) error {
		e := &Error{Source: source, Key: key, Msg: fmt.Sprintf(format, args...)}
		if flag, ok := flags[key]; ok {
			e.Source, e.Key = "flag "+flag, ""
		} else if data != nil {
			e.Line = indexKeys(data).lineOf(key)
		}
		return e
	}
	for _, part := range []func(failFunc) error{c.checkServer, c.checkTCPAndLog, c.checkOthers} {
		if err := part(fail); err != nil {
			return err
		}
	}
	return nil
}

// failFunc makes the error of check for the value of key.
type failFunc func(key, format string, args ...any) error

// checkServer checks [server].
func (c *Config) checkServer(fail failFunc) error {
	s := &c.Server
	if err := checkSocketPath(s.Socket); err != nil {
		return fail("server.socket", "%v", err)
	}
	if !filepath.IsAbs(s.PluginSocketDir) {
		return fail("server.plugin_socket_dir", "%q is not an absolute path", s.PluginSocketDir)
	}
	if s.SocketMode == 0 {
		return fail("server.socket_mode", "must not be 0: nobody could connect")
	}
	if s.SocketMode&^0o777 != 0 {
		return fail("server.socket_mode", "%s has bits beyond 0777", s.SocketMode)
	}
	for key, g := range map[string]string{"server.socket_group": s.SocketGroup, "server.plugin_socket_dir_group": s.PluginSocketDirGroup} {
		if g == "" {
			continue
		}
		if _, err := LookupGroup(g); err != nil {
			return fail(key, "%v", err)
		}
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{
		{"server.registration_timeout", s.RegistrationTimeout}, {"server.request_timeout", s.RequestTimeout},
		{"server.max_timeout", s.MaxTimeout}, {"server.shutdown_grace", s.ShutdownGrace}, {"server.stop_timeout", s.StopTimeout},
	} {
		if d.v <= 0 {
			return fail(d.key, "must be a positive duration")
		}
	}
	if s.RestartGrace < 0 {
		return fail("server.restart_grace", "must not be negative (0 disables the restart gate)")
	}
	if _, err := policy.ParseNotReady(s.NotReady); err != nil {
		return fail("server.not_ready", "%v", err)
	}
	if s.MinResyncInterval < 0 {
		return fail("server.min_resync_interval", "must not be negative (0 disables the interval)")
	}
	if s.StateDir != "" && !filepath.IsAbs(s.StateDir) {
		return fail("server.state_dir", "%q is not an absolute path", s.StateDir)
	}
	if s.MaxMessageSize < 64<<10 {
		return fail("server.max_message_size", "%d is below the minimum of 65536 bytes", s.MaxMessageSize)
	}
	if s.MaxConcurrentCalls < 1 {
		return fail("server.max_concurrent_calls", "must be at least 1")
	}
	if s.RegisterRate < 0 {
		return fail("server.register_rate", "must not be negative (0 disables the limit)")
	}
	if s.RegisterRate > 0 && s.RegisterBurst < 1 {
		return fail("server.register_burst", "must be at least 1 when register_rate is set")
	}
	return nil
}

// checkTCPAndLog checks [tcp], [log] and [observability].
func (c *Config) checkTCPAndLog(fail failFunc) error {
	if t := &c.TCP; t.Address != "" {
		switch {
		case t.CertFile == "":
			return fail("tcp.cert_file", "must be set when tcp.address is: TCP is always TLS")
		case t.KeyFile == "":
			return fail("tcp.key_file", "must be set when tcp.address is: TCP is always TLS")
		case t.ClientAuth == "require" && t.ClientCAFile == "":
			return fail("tcp.client_ca_file", "must be set when client_auth is \"require\"")
		case t.ClientAuth == "optional" && t.ClientCAFile == "" && t.TokensFile == "":
			return fail("tcp.tokens_file", "must be set when client_auth is \"optional\" and no client_ca_file is set: nobody could authenticate")
		}
	}
	switch c.TCP.ClientAuth {
	case "require", "optional":
	default:
		return fail("tcp.client_auth", "%q is not \"require\" or \"optional\"", c.TCP.ClientAuth)
	}

	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return fail("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		return fail("log.format", "%q is not \"text\" or \"json\"", c.Log.Format)
	}

	o := &c.Observability
	switch o.Tracing {
	case "off", "stdout":
	case "otlp":
		if o.OTLPEndpoint == "" {
			return fail("observability.otlp_endpoint", "must be set when tracing is \"otlp\"")
		}
	default:
		return fail("observability.tracing", "%q is not one of off, stdout, otlp", o.Tracing)
	}
	return nil
}

// checkOthers checks [validator], [launch], [bridge] and the [[policy]] and
// [[plugin]] entries.
func (c *Config) checkOthers(fail failFunc) error {
	if _, err := validate.New(c.Validator); err != nil {
		key := "validator"
		if k, _, ok := strings.Cut(err.Error(), ":"); ok && !strings.Contains(k, " ") {
			key = "validator." + k
		}
		return fail(key, "%v", strings.TrimPrefix(err.Error(), strings.TrimPrefix(key, "validator.")+": "))
	}

	for key, dir := range map[string]string{"launch.plugin_dir": c.Launch.PluginDir, "launch.config_dir": c.Launch.ConfigDir} {
		if dir != "" && !filepath.IsAbs(dir) {
			return fail(key, "%q is not an absolute path", dir)
		}
	}
	if c.Launch.ConfigDir != "" && c.Launch.PluginDir == "" {
		return fail("launch.config_dir", "is set but launch.plugin_dir is not")
	}
	if b := c.Bridge; b.PluginIndex != "" && (len(b.PluginIndex) != 2 || b.PluginIndex[0] < '0' || b.PluginIndex[0] > '9' || b.PluginIndex[1] < '0' || b.PluginIndex[1] > '9') {
		return fail("bridge.plugin_index", "%q must be exactly two digits", b.PluginIndex)
	}
	if d := c.Wasm.CacheDir; d != "" && !filepath.IsAbs(d) {
		return fail("wasm.cache_dir", "%q is not an absolute path", d)
	}
	if m := c.Wasm.MemoryLimit; m != 0 && (m < 1<<20 || m > 1<<32) {
		return fail("wasm.memory_limit", "%d bytes is not between 1 MiB and 4 GiB (0: the default of 128 MiB)", m)
	}

	if _, err := c.CompilePolicy(); err != nil {
		var re *policy.RuleError
		if errors.As(err, &re) {
			return fail(re.Key, "%v", re.Err)
		}
		return fail("policy", "%v", err)
	}
	return nil
}

// CompilePolicy compiles the [[policy]] and [[plugin]] entries.
func (c *Config) CompilePolicy() (*policy.Policy, error) {
	return policy.New(c.Policy, policy.Options{PluginSocketDir: c.Server.PluginSocketDir, Plugins: c.Plugins})
}

// ValidatorConfig is the validator's configuration with the [[plugin]]
// entries marked required added to its required plugins: one list of
// required plugins.
func (c *Config) ValidatorConfig(p *policy.Policy) validate.Config {
	v := c.Validator
	v.RequiredPlugins = append([]string(nil), v.RequiredPlugins...)
	for _, name := range p.RequiredPlugins() {
		dup := false
		for _, have := range v.RequiredPlugins {
			dup = dup || have == name
		}
		if !dup {
			v.RequiredPlugins = append(v.RequiredPlugins, name)
		}
	}
	return v
}

func checkSocketPath(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%q is not an absolute path", p)
	}
	if len(p) > 107 {
		return fmt.Errorf("%q is %d bytes; a unix socket path may have at most 107", p, len(p))
	}
	return nil
}

// LookupGroup resolves a group name or number to a gid.
func LookupGroup(g string) (int, error) {
	if n, err := strconv.Atoi(g); err == nil && n >= 0 {
		return n, nil
	}
	gr, err := user.LookupGroup(g)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(gr.Gid)
}

// Duration is a TOML duration string ("5s", "1m30s").
type Duration time.Duration

// valueError is an invalid value reported by UnmarshalText.
type valueError struct{ msg string }

func (e *valueError) Error() string { return e.msg }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return &valueError{fmt.Sprintf("%q is not a duration (write it as a string: \"5s\", \"1m30s\")", string(b))}
	}
	*d = Duration(v)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// FileMode is an octal file mode, written as a string ("0660", "1777");
// "" is unset (0).
type FileMode uint32

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *FileMode) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*m = 0 // unset
		return nil
	}
	s := strings.TrimPrefix(string(b), "0o")
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o7777 {
		return &valueError{fmt.Sprintf("%q is not an octal file mode (write it as a string: \"0660\")", string(b))}
	}
	*m = FileMode(v)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (m FileMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// String is the mode in octal ("0600"), "" for 0 (unset).
func (m FileMode) String() string {
	if m == 0 {
		return ""
	}
	return fmt.Sprintf("%04o", uint32(m))
}

// Perm returns the mode as an fs.FileMode, with the setuid, setgid and
// sticky bits mapped.
func (m FileMode) Perm() fs.FileMode {
	out := fs.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		out |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		out |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		out |= fs.ModeSticky
	}
	return out
}
