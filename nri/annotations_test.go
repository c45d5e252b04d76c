package nri_test

import (
	"testing"

	"github.com/containerd/nri/pkg/api"
	classic "github.com/containerd/nri/pkg/plugin"

	"github.com/nri-grpc/nri-grpc/nri"
)

func TestEffectiveAnnotation(t *testing.T) {
	t.Parallel()
	const key = "k"
	all := map[string]string{"k/container.c": "ctr", "k/pod": "pod", "k": "bare"}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		ctr         string
		want        string
		wantOK      bool
	}{
		{name: "nil map", ctr: "c"},
		{name: "container wins", annotations: all, ctr: "c", want: "ctr", wantOK: true},
		{name: "other container gets pod", annotations: all, ctr: "d", want: "pod", wantOK: true},
		{name: "bare key", annotations: map[string]string{"k": "bare"}, ctr: "c", want: "bare", wantOK: true},
		{name: "empty value is present", annotations: map[string]string{"k/pod": ""}, ctr: "c", want: "", wantOK: true},
		{name: "unrelated keys", annotations: map[string]string{"kk": "x", "k/container.cc": "y", "k/pods": "z"}, ctr: "c"},
	} {
		got, ok := nri.EffectiveAnnotation(tc.annotations, key, tc.ctr)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: EffectiveAnnotation = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}

// TestDifferentialEffectiveAnnotation compares EffectiveAnnotation with
// classic NRI's GetEffectiveAnnotation.
func TestDifferentialEffectiveAnnotation(t *testing.T) {
	t.Parallel()
	sets := []map[string]string{
		nil,
		{},
		{"k": "bare"},
		{"k/pod": "pod", "k": "bare"},
		{"k/container.c": "ctr", "k/pod": "pod", "k": "bare"},
		{"k/container.": "unnamed", "k/container.d": "other"},
		{"k/pods": "x", "kk": "y", "k/container.cc": "z"},
	}
	for _, annotations := range sets {
		for _, ctr := range []string{"c", "d", ""} {
			got, ok := nri.EffectiveAnnotation(annotations, "k", ctr)
			want, wantOK := classic.GetEffectiveAnnotation(&api.PodSandbox{Annotations: annotations}, "k", ctr)
			if got != want || ok != wantOK {
				t.Errorf("annotations=%q ctr=%q: got %q, %v; classic %q, %v", annotations, ctr, got, ok, want, wantOK)
			}
		}
	}
}
