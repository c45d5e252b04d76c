package server

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// additiveDelta returns what merging adj will change in a CreateContainer
// request whose container is ctr, encoded as a CreateContainerRequest, when
// protobuf's merging of concatenated encodings expresses it exactly: new or
// replaced annotations (a map entry decoded later replaces an earlier one)
// and environment variables whose names ctr does not have yet (the merge
// appends them, and so does a repeated field decoded later). Appended to the
// encoding of the request before the merge, it encodes the request after
// it, so the next plugin's request need not be encoded whole again.
//
// Anything else in adj — a removal marker, a variable that replaces one of
// ctr's, any other field, unknown fields — returns nil: the request is
// encoded whole then. It must be called before adj is merged.
func additiveDelta(ctr *nriv1beta1.Container, adj *nriv1beta1.ContainerAdjustment) []byte {
	if adj == nil || ctr == nil || (len(adj.Annotations) == 0 && len(adj.Env) == 0) {
		return nil
	}
	// Nothing but annotations and env: the two encode to the whole size.
	if (&nriv1beta1.ContainerAdjustment{Annotations: adj.Annotations, Env: adj.Env}).SizeVT() != adj.SizeVT() {
		return nil
	}
	for k := range adj.Annotations {
		if strings.HasPrefix(k, "-") {
			return nil
		}
	}
	var env []string
	if len(adj.Env) > 0 {
		env = make([]string, 0, len(adj.Env))
		for i, kv := range adj.Env {
			if kv == nil {
				continue // the merge skips empty entries too
			}
			if strings.HasPrefix(kv.Key, "-") || slices.ContainsFunc(ctr.Env, func(e string) bool { return envName(e) == kv.Key }) ||
				slices.ContainsFunc(adj.Env[:i], func(o *nriv1beta1.KeyValue) bool { return o != nil && o.Key == kv.Key }) {
				return nil
			}
			env = append(env, kv.Key+"="+kv.Value)
		}
	}
	d := &nriv1beta1.CreateContainerRequest{Container: &nriv1beta1.Container{Annotations: adj.Annotations, Env: env}}
	b, err := d.MarshalVT()
	if err != nil {
		return nil
	}
	return b
}

// envName returns the name of an environment entry ("NAME=value").
func envName(e string) string {
	name, _, _ := strings.Cut(e, "=")
	return name
}

// encodedKey is the context key of an encodedReq.
type encodedKey struct{}

// encodedReq is a request and its encoding, handed over by the caller.
type encodedReq struct {
	req proto.Message
	raw []byte
}

// WithEncodedRequest returns a context that hands the server the encoding of
// req, a request the caller is about to pass to one of the server's event
// methods (the same pointer): the server then sends raw to the first plugin
// that gets req over gRPC instead of encoding req itself. raw must be a
// protobuf encoding of req as the plugin-facing request message — for
// example the bytes req was decoded from, which is how the bridge passes on
// a classic runtime's requests (v1alpha1 and v1beta1 share the wire format).
// A context carrying another request's encoding changes nothing.
func WithEncodedRequest(ctx context.Context, req proto.Message, raw []byte) context.Context {
	return context.WithValue(ctx, encodedKey{}, encodedReq{req: req, raw: raw})
}

// encodedFor returns the encoding of req handed over with
// WithEncodedRequest, clipped so that appending to it never writes into the
// caller's buffer, or nil.
func encodedFor(ctx context.Context, req proto.Message) []byte {
	e, ok := ctx.Value(encodedKey{}).(encodedReq)
	if !ok || e.req != req || len(e.raw) == 0 {
		return nil
	}
	return slices.Clip(e.raw)
}
