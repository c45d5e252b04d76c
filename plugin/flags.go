package plugin

import "flag"

// Flags are the standard command line flags of a plugin binary: -name,
// -idx, -server and -endpoint. Register them, parse, and pass Options to
// New. Flags left empty add no option, so the environment of a
// pre-launched plugin and the binary's "NN-name" still apply.
type Flags struct {
	// Name is the plugin name (-name).
	Name string
	// Index is the plugin index (-idx).
	Index string
	// ServerAddress is nrid's address (-server).
	ServerAddress string
	// Endpoint is the plugin's own socket (-endpoint).
	Endpoint string
}

// Register defines the flags on fs, with the current field values as
// defaults.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Name, "name", f.Name, "plugin name to register with (env "+EnvPluginName+" wins)")
	fs.StringVar(&f.Index, "idx", f.Index, "two-digit plugin index to register with (env "+EnvPluginIndex+" wins)")
	fs.StringVar(&f.ServerAddress, "server", f.ServerAddress,
		"NRI server address, unix:///path or a socket path (default "+DefaultServerAddress+"; env "+EnvServerAddress+" wins)")
	fs.StringVar(&f.Endpoint, "endpoint", f.Endpoint,
		"unix socket to serve the plugin on (default "+DefaultSocketDir+"/NN-name.sock; env "+EnvPluginEndpoint+" wins)")
}

// Options returns the options of the flags that are set.
func (f *Flags) Options() []Option {
	var out []Option
	if f.Name != "" {
		out = append(out, WithName(f.Name))
	}
	if f.Index != "" {
		out = append(out, WithIndex(f.Index))
	}
	if f.ServerAddress != "" {
		out = append(out, WithServerAddress(f.ServerAddress))
	}
	if f.Endpoint != "" {
		out = append(out, WithEndpoint(f.Endpoint))
	}
	return out
}
