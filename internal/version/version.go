// Package version reports the version of the nri-grpc build.
package version

import "runtime/debug"

// Protocol is the NRI protocol version nri-grpc speaks.
const Protocol = "v1beta1"

// Module is the Go module path of nri-grpc.
const Module = "github.com/nri-grpc/nri-grpc"

// Server returns the nri-grpc version: the module version of the running
// binary when it was built from a tagged module, "(devel)" otherwise, with
// the VCS revision when the build recorded one.
func Server() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := "(devel)"
	if info.Main.Path == Module && info.Main.Version != "" {
		v = info.Main.Version
	} else {
		for _, d := range info.Deps {
			if d.Path == Module {
				v = d.Version
			}
		}
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 && v == "(devel)" {
			v += "+" + s.Value[:12]
		}
	}
	return v
}

// NRI returns the value of the nri_version fields: protocol and server
// version, for example "v1beta1 nri-grpc/(devel)".
func NRI() string { return Protocol + " nri-grpc/" + Server() }
