// Package bridge connects nri-grpc to classic NRI (v1alpha1 over ttrpc and
// the multiplexed socket), in both directions:
//
//   - the runtime side (RuntimeSide) attaches to a classic runtime's NRI
//     socket (containerd, CRI-O) as ONE v1alpha1 plugin and relays every
//     event to the server;
//   - the plugin side (PluginSide) accepts classic plugins on a ttrpc socket,
//     or launches them the classic way, and registers each in-process in the
//     server as a plugin of its own.
//
// Messages cross by their bytes: v1beta1 is wire-compatible with v1alpha1
// (test/wirecompat), so conversion is one encode and one decode, with no
// field-by-field code to drift. The bridge has no dispatch or merge logic of
// its own: the server decides, the bridge translates.
//
// RuntimeOption and PluginOption have the shape of server.Option and
// plugin.Option: they only record values; NewRuntimeSide and NewPluginSide
// validate them and name the offending option in their error.
package bridge

import (
	"fmt"
)

// vtMessage is a message with vtprotobuf fast paths (both API versions
// have them).
type vtMessage interface {
	MarshalVT() ([]byte, error)
	UnmarshalVT([]byte) error
}

// convert copies in into out, a message of the other API version, through
// their shared wire format.
func convert[T vtMessage](in vtMessage, out T) (T, error) {
	b, err := in.MarshalVT()
	if err != nil {
		return out, fmt.Errorf("bridge: encoding %T: %w", in, err)
	}
	if err := out.UnmarshalVT(b); err != nil {
		return out, fmt.Errorf("bridge: decoding %T as %T: %w", in, out, err)
	}
	return out, nil
}
