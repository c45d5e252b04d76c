package validate_test

import (
	"errors"
	"strings"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

const (
	ctrID   = "ctr-id"
	ctrName = "ctr"
)

// spec describes a validation request compactly. The zero value is a request
// with a pod, a container without Linux part, empty owners and no adjustment.
type spec struct {
	adjust       bool                                    // set an (empty) adjustment
	hooks        *string                                 // FIELD_OCI_HOOKS owner, if any
	seccomp      *string                                 // FIELD_SECCOMP_POLICY owner, if any
	profile      *nriv1beta1.SecurityProfile_ProfileType // container seccomp profile type; nil: no profile
	namespaces   map[string]string                       // FIELD_NAMESPACE owners, if non-nil
	sysctl       map[string]string                       // adjust.linux.sysctl, if non-nil
	sysctlOwners map[string]string                       // FIELD_SYSCTL owners, if non-nil
	plugins      []string                                // registered plugins, as "NN-name"
	annotations  map[string]string                       // pod annotations
	noOwners     bool                                    // leave owners nil
}

func ptr[T any](v T) *T { return &v }

func (s spec) request() *nriv1beta1.ValidateContainerAdjustmentRequest {
	req := &nriv1beta1.ValidateContainerAdjustmentRequest{
		Pod: &nriv1beta1.PodSandbox{
			Id:          "pod-id",
			Name:        "pod",
			Namespace:   "default",
			Annotations: s.annotations,
		},
		Container: &nriv1beta1.Container{
			Id:           ctrID,
			PodSandboxId: "pod-id",
			Name:         ctrName,
		},
	}
	if s.profile != nil {
		req.Container.Linux = &nriv1beta1.LinuxContainer{
			SeccompProfile: &nriv1beta1.SecurityProfile{ProfileType: *s.profile},
		}
	}
	if s.adjust || s.sysctl != nil {
		req.Adjust = &nriv1beta1.ContainerAdjustment{}
	}
	if s.sysctl != nil {
		req.Adjust.Linux = &nriv1beta1.LinuxContainerAdjustment{Sysctl: s.sysctl}
	}
	if !s.noOwners {
		fo := &nriv1beta1.FieldOwners{
			Simple:   map[int32]string{},
			Compound: map[int32]*nriv1beta1.CompoundFieldOwners{},
		}
		if s.hooks != nil {
			fo.Simple[int32(nriv1beta1.Field_FIELD_OCI_HOOKS)] = *s.hooks
		}
		if s.seccomp != nil {
			fo.Simple[int32(nriv1beta1.Field_FIELD_SECCOMP_POLICY)] = *s.seccomp
		}
		if s.namespaces != nil {
			fo.Compound[int32(nriv1beta1.Field_FIELD_NAMESPACE)] = &nriv1beta1.CompoundFieldOwners{Owners: s.namespaces}
		}
		if s.sysctlOwners != nil {
			fo.Compound[int32(nriv1beta1.Field_FIELD_SYSCTL)] = &nriv1beta1.CompoundFieldOwners{Owners: s.sysctlOwners}
		}
		req.Owners = &nriv1beta1.OwningPlugins{Owners: map[string]*nriv1beta1.FieldOwners{ctrID: fo}}
	}
	req.Plugins = instances(s.plugins...)
	return req
}

// instances turns "NN-name" strings into plugin instances.
func instances(fullNames ...string) []*nriv1beta1.PluginInstance {
	var out []*nriv1beta1.PluginInstance
	for _, full := range fullNames {
		idx, name, _ := strings.Cut(full, "-")
		out = append(out, &nriv1beta1.PluginInstance{Name: name, Index: idx})
	}
	return out
}

func mustNew(t *testing.T, cfg validate.Config) *validate.Validator {
	t.Helper()
	v, err := validate.New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return v
}

// checkVerdict asserts err against want: "" means accept; otherwise a
// rejection that wraps ErrValidation with exactly that text.
func checkVerdict(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("rejected: %v; want accepted", err)
	case want == "":
	case err == nil:
		t.Fatalf("accepted; want rejection %q", want)
	case err.Error() != want:
		t.Fatalf("rejection text\n got: %q\nwant: %q", err.Error(), want)
	case !errors.Is(err, validate.ErrValidation):
		t.Fatalf("rejection %q does not wrap ErrValidation", err)
	}
}
