package server

import (
	"fmt"
	"math/rand/v2"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/server/merge"
)

// randomAdjustment builds an adjustment from the kinds additiveDelta must
// tell apart: new and replaced annotations, new and replacing env variables,
// removals, and other fields.
func randomAdjustment(r *rand.Rand, step int, ctr *nriv1beta1.Container) *nriv1beta1.ContainerAdjustment {
	adj := &nriv1beta1.ContainerAdjustment{}
	for i := range r.IntN(3) {
		if adj.Annotations == nil {
			adj.Annotations = map[string]string{}
		}
		adj.Annotations[fmt.Sprintf("step%d.example.com/a%d", step, i)] = fmt.Sprint(r.Int())
	}
	for i := range r.IntN(3) {
		adj.Env = append(adj.Env, &nriv1beta1.KeyValue{Key: fmt.Sprintf("STEP%d_VAR%d", step, i), Value: fmt.Sprint(r.Int())})
	}
	switch r.IntN(8) {
	case 0: // replace an annotation the request already has
		for k := range ctr.Annotations {
			if adj.Annotations == nil {
				adj.Annotations = map[string]string{}
			}
			adj.Annotations[k] = "replaced"
			break
		}
	case 1: // replace an env variable the request already has
		if len(ctr.Env) > 0 {
			adj.Env = append(adj.Env, &nriv1beta1.KeyValue{Key: "PATH", Value: "/replaced"})
		}
	case 2: // remove an annotation
		for k := range ctr.Annotations {
			adj.Annotations = map[string]string{"-" + k: ""}
			break
		}
	case 3: // remove an env variable
		adj.Env = append(adj.Env, &nriv1beta1.KeyValue{Key: "-HOME"})
	case 4: // another field
		adj.Mounts = append(adj.Mounts, &nriv1beta1.Mount{Destination: fmt.Sprintf("/step%d", step), Source: "/src", Type: "bind"})
	}
	return adj
}

// TestAdditiveDeltaMatchesMerge checks, over random chains of adjustments,
// that whenever additiveDelta returns a delta, the encoding before the
// merge plus the delta decodes to exactly the merged request.
func TestAdditiveDeltaMatchesMerge(t *testing.T) {
	deltas, wholes := 0, 0
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		req := fixture.CreateContainerRequest(int(seed), 0)
		m := merge.NewCreate(req)
		raw, err := req.MarshalVT()
		if err != nil {
			t.Fatal(err)
		}
		for step := range 6 {
			adj := randomAdjustment(r, step, req.Container)
			d := additiveDelta(req.Container, adj)
			if _, err := m.Apply(fmt.Sprintf("%02d-p", step), &nriv1beta1.CreateContainerResponse{Adjust: adj}, nil); err != nil {
				// A conflict with an earlier step's plugin fails the
				// event: the chain ends there.
				break
			}
			if d == nil {
				wholes++
				if raw, err = req.MarshalVT(); err != nil {
					t.Fatal(err)
				}
				continue
			}
			deltas++
			raw = append(raw, d...)
			got := &nriv1beta1.CreateContainerRequest{}
			if err := got.UnmarshalVT(raw); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			if !got.EqualVT(req) {
				t.Fatalf("seed %d step %d: encoding plus delta decodes to\n%v\nthe merged request is\n%v\nadjustment %v", seed, step, got, req, adj)
			}
		}
	}
	// Both paths must have been taken often, or the test proves nothing.
	if deltas < 200 || wholes < 200 {
		t.Fatalf("%d deltas and %d whole encodings: the random adjustments do not cover both paths", deltas, wholes)
	}
	t.Logf("%d deltas, %d whole encodings", deltas, wholes)
}

func TestAdditiveDeltaRefuses(t *testing.T) {
	ctr := fixture.CreateContainerRequest(1, 0).Container
	for name, adj := range map[string]*nriv1beta1.ContainerAdjustment{
		"nil":                   nil,
		"empty":                 {},
		"annotation removal":    {Annotations: map[string]string{"-x": ""}},
		"existing env variable": {Env: []*nriv1beta1.KeyValue{{Key: "PATH", Value: "x"}}},
		"env removal":           {Env: []*nriv1beta1.KeyValue{{Key: "-PATH"}}},
		"args":                  {Annotations: map[string]string{"a": "b"}, Args: []string{"sh"}},
		"linux":                 {Annotations: map[string]string{"a": "b"}, Linux: &nriv1beta1.LinuxContainerAdjustment{CgroupsPath: "/x"}},
	} {
		if d := additiveDelta(ctr, adj); d != nil {
			t.Errorf("%s: got a delta of %d bytes, want none", name, len(d))
		}
	}
}
