package server

import (
	"slices"
	"strings"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/merge"
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

// normalisedShape encodes a CreateContainerRequest holding, each empty,
// the messages merge.NewCreate adds to a container that lacks them (it is
// made by NewCreate itself). Appended to a request's encoding it adds those
// the request lacks and changes nothing else, so that a plugin sent a
// handed-over encoding (Encoded) sees the request in the shape
// merge.NewCreate gives it.
var normalisedShape = func() []byte {
	req := &nriv1beta1.CreateContainerRequest{}
	merge.NewCreate(req)
	b, err := req.MarshalVT()
	if err != nil {
		panic(err)
	}
	return b
}()
