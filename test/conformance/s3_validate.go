package conformance

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

// Classic NRI's validation scenarios ("there are validating plugins", the
// default validator's knobs, required plugins), and validation contract
// points classic's suite does not cover.

const (
	requiredAnnotation = validate.RequiredPluginsAnnotation
	tolerateAnnotation = validate.DefaultTolerateMissingPluginsAnnotation
)

// accept is a validator that accepts everything.
func accept(context.Context, *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
	return &nriv1beta1.ValidateContainerAdjustmentResponse{}, nil
}

// annotationOwner returns the owner of annotation key of the validated
// container (classic's Owners.AnnotationOwner).
func annotationOwner(req *nriv1beta1.ValidateContainerAdjustmentRequest, key string) (string, bool) {
	o, ok := req.GetOwners().GetOwners()[req.GetContainer().GetId()].GetCompound()[int32(nriv1beta1.Field_FIELD_ANNOTATIONS)].GetOwners()[key]
	return o, ok
}

func init() {
	const g = "Validation"
	allowed := func(forbiddenKey bool) func(s *S) {
		return func(s *S) {
			const forbidden = "no-no"
			s.Start("00", "foo", onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
				key := "key"
				if forbiddenKey {
					key = forbidden
				}
				return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{key: "00-foo"}}}, nil
			}))
			s.Start("00", "validator", onValidate(func(_ context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
				if _, ok := annotationOwner(req, forbidden); ok {
					return nil, fmt.Errorf("forbidden annotation %q adjusted", forbidden)
				}
				return &nriv1beta1.ValidateContainerAdjustmentResponse{}, nil
			}))
			pod := newPod("pod0", nil)
			s.runPod(pod)
			s.Log().Reset()
			rsp, err := s.create(pod, newCtr("pod0", "ctr0"))
			// Equal indices run by name, then validators after every other plugin.
			eq(s, "calls", s.Log().Strings(), []string{"00-foo:CreateContainer", "00-validator:CreateContainer", "00-validator:ValidateContainerAdjustment"})
			if forbiddenKey {
				s.failsWith("CreateContainer with a forbidden annotation", err, codes.FailedPrecondition, "DISPATCH_OUTCOME_REJECTED",
					"00-validator", `forbidden annotation "no-no" adjusted`)
				s.namesPlugins("rejection", err, "00-validator")
				return
			}
			s.must("CreateContainer", err)
			protoEq(s, "merged adjustment", rsp.GetAdjust(), &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"key": "00-foo"}})
		}
	}
	add(Upstream, g, "there are validating plugins: validation result should be honored: adjust allowed annotation", Options{}, allowed(false))
	add(Upstream, g, "there are validating plugins: validation result should be honored: adjust forbidden annotation", Options{}, allowed(true))

	// The default validator: 00-foo adjusts ctr1 only, two accepting
	// validating plugins; ctr0 must pass, ctr1 as the knob says.
	knob := func(ctr1 func() *nriv1beta1.Container, adjust *nriv1beta1.ContainerAdjustment, rejected bool, why string) func(s *S) {
		return func(s *S) {
			s.Start("00", "foo", onCreate(func(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
				if req.GetContainer().GetName() == "ctr1" {
					return &nriv1beta1.CreateContainerResponse{Adjust: adjust}, nil
				}
				return nil, nil
			}))
			s.Start("10", "validator1", onValidate(accept))
			s.Start("20", "validator2", onValidate(accept))
			pod := newPod("pod0", nil)
			s.runPod(pod)
			s.mustCreate(pod, newCtr("pod0", "ctr0"))
			rsp, err := s.create(pod, ctr1())
			if !rejected {
				s.must("CreateContainer ctr1", err)
				return
			}
			s.failsWith("CreateContainer ctr1", err, codes.FailedPrecondition, "DISPATCH_OUTCOME_REJECTED", why)
			if rsp != nil {
				s.Errorf("a rejected creation returned a result: %v", rsp)
			}
		}
	}
	with := func(p nriv1beta1.SecurityProfile_ProfileType) func() *nriv1beta1.Container {
		return func() *nriv1beta1.Container {
			c := newCtr("pod0", "ctr1")
			c.Linux = &nriv1beta1.LinuxContainer{SeccompProfile: &nriv1beta1.SecurityProfile{ProfileType: p}}
			return c
		}
	}
	plain := func() *nriv1beta1.Container { return newCtr("pod0", "ctr1") }
	hook := &nriv1beta1.ContainerAdjustment{Hooks: &nriv1beta1.Hooks{Prestart: []*nriv1beta1.Hook{{Path: "/bin/sh", Args: []string{"/bin/sh", "-c", "true"}}}}}
	seccomp := &nriv1beta1.ContainerAdjustment{Linux: &nriv1beta1.LinuxContainerAdjustment{SeccompPolicy: seccompPolicy()}}
	ns := &nriv1beta1.ContainerAdjustment{Linux: &nriv1beta1.LinuxContainerAdjustment{Namespaces: []*nriv1beta1.LinuxNamespace{{Type: "cgroup", Path: "/"}}}}
	add(Upstream, g, "the default validator is enabled and OCI Hook injection is disabled: should reject OCI Hook injection",
		Options{Validator: validate.Config{RejectOCIHookAdjustment: true}},
		knob(plain, hook, true, `plugin "00-foo" attempted restricted OCI hook injection`))
	for _, c := range []struct {
		kind    string
		profile nriv1beta1.SecurityProfile_ProfileType
		cfg     validate.Config
		msg     string
	}{
		{"runtime default", nriv1beta1.SecurityProfile_PROFILE_TYPE_RUNTIME_DEFAULT, validate.Config{RejectRuntimeDefaultSeccompAdjustment: true},
			"plugin 00-foo attempted restricted runtime default seccomp policy adjustment"},
		{"custom", nriv1beta1.SecurityProfile_PROFILE_TYPE_LOCALHOST, validate.Config{RejectCustomSeccompAdjustment: true},
			"plugin 00-foo attempted restricted  custom seccomp policy adjustment"},
		{"unconfined", nriv1beta1.SecurityProfile_PROFILE_TYPE_UNCONFINED, validate.Config{RejectUnconfinedSeccompAdjustment: true},
			"plugin 00-foo attempted restricted  unconfined seccomp policy adjustment"},
	} {
		add(Upstream, g, "default validator disallows "+c.kind+" seccomp policy adjustment: should reject "+c.kind+" seccomp policy adjustment",
			Options{Validator: c.cfg}, knob(with(c.profile), seccomp, true, c.msg))
		// "allows": the knob off, another knob on so that the validator runs.
		add(Upstream, g, "default validator allows "+c.kind+" seccomp policy adjustment: should not reject "+c.kind+" seccomp policy adjustment",
			Options{Validator: validate.Config{RejectNamespaceAdjustment: true}}, knob(with(c.profile), seccomp, false, ""))
	}
	add(Upstream, g, "the default validator is enabled and namespace adjustment is disabled: should reject namespace adjustment",
		Options{Validator: validate.Config{RejectNamespaceAdjustment: true}},
		knob(plain, ns, true, `attempted restricted namespace adjustment by plugin(s) "00-foo" (namespace "cgroup")`))
	add(Gap, g, "the default validator is enabled and sysctl adjustment is disabled: should reject sysctl adjustment",
		Options{Validator: validate.Config{RejectSysctlAdjustment: true}},
		knob(plain, &nriv1beta1.ContainerAdjustment{Linux: &nriv1beta1.LinuxContainerAdjustment{
			Sysctl: map[string]string{"net.core.somaxconn": "256"}}}, true, "attempted restricted sysctl adjustment by plugin(s) 00-foo"))
	add(Gap, g, "the default validator is enabled and sysctl adjustment is disabled: a pure sysctl removal passes",
		Options{Validator: validate.Config{RejectSysctlAdjustment: true}},
		knob(plain, &nriv1beta1.ContainerAdjustment{Linux: &nriv1beta1.LinuxContainerAdjustment{
			Sysctl: map[string]string{"-net.core.somaxconn": ""}}}, false, ""))

	// Required plugins: the operator requires foo and bar; 00-foo runs.
	required := Options{Validator: validate.Config{RequiredPlugins: []string{"foo", "bar"}, TolerateMissingPluginsAnnotation: tolerateAnnotation}}
	const rp = "the default validator is enabled with some required plugins: "
	add(Upstream, g, rp+"should not allow container creation if required plugins are missing", required, func(s *S) {
		s.Start("00", "foo")
		pod := newPod("pod0", nil)
		_ = s.send("RunPodSandbox", pod, nil) // fails too in nri-grpc; see the deliberate scenario
		rsp, err := s.create(pod, newCtr("pod0", "ctr0"))
		s.failsWith("CreateContainer", err, codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "bar")
		s.namesPlugins("missing plugins", err, "bar")
		if rsp != nil {
			s.Errorf("a failed creation returned a result: %v", rsp)
		}
	})
	add(Deliberate, g, rp+"DESIGN 5.3: the tolerate-missing-plugins annotation never overrides the operator's list", required, func(s *S) {
		s.Start("00", "foo")
		pod := newPod("pod0", map[string]string{tolerateAnnotation + "/container.ctr0": "true"})
		_, err := s.create(pod, newCtr("pod0", "ctr0"))
		s.failsWith("CreateContainer of a tolerating pod", err, codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "bar")
	})
	add(Upstream, g, rp+"should allow container creation if all required plugins are present", required, func(s *S) {
		s.Start("00", "foo")
		s.Start("10", "bar")
		pod := newPod("pod0", nil)
		s.runPod(pod)
		if rsp := s.mustCreate(pod, newCtr("pod0", "ctr0")); rsp == nil {
			s.Fatal("no result")
		}
	})
	add(Upstream, g, rp+"should not allow container creation if annotated required plugins are missing", required, func(s *S) {
		s.Start("00", "foo")
		s.Start("10", "bar")
		pod := newPod("pod0", map[string]string{requiredAnnotation + "/container.ctr0": `[ "xyzzy" ]`})
		s.runPod(pod)
		_, err := s.create(pod, newCtr("pod0", "ctr0"))
		s.failsWith("CreateContainer without xyzzy", err, codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "xyzzy")
		s.namesPlugins("missing plugins", err, "xyzzy")
		s.Start("20", "xyzzy")
		s.mustCreate(pod, newCtr("pod0", "ctr0"))
	})
	add(Deliberate, g, "DESIGN 5.3: the operator's required plugins fail every creating event, RunPodSandbox included",
		Options{Validator: validate.Config{RequiredPlugins: []string{"gpu"}}}, func(s *S) {
			pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
			for _, ev := range []string{"RunPodSandbox", "UpdatePodSandbox", "CreateContainer", "StartContainer", "UpdateContainer"} {
				s.failsWith(ev+" without the required plugin", s.send(ev, pod, ctr), codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "gpu")
			}
			// Teardown and notifications go on.
			for _, ev := range []string{"PostCreateContainer", "StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox"} {
				s.must(ev+" without the required plugin", s.send(ev, pod, ctr))
			}
			s.Start("30", "gpu")
			s.lifecycle(pod, ctr)
		})
	add(Gap, g, rp+"an index-qualified requirement (NN-name) matches only that index",
		Options{Validator: validate.Config{RequiredPlugins: []string{"10-bar"}}}, func(s *S) {
			s.Start("20", "bar")
			pod := newPod("pod0", nil)
			_, err := s.create(pod, newCtr("pod0", "ctr0"))
			s.failsWith("CreateContainer with 20-bar only", err, codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "10-bar")
			s.Start("10", "bar")
			s.runPod(pod)
			s.mustCreate(pod, newCtr("pod0", "ctr0"))
		})
	add(Gap, g, rp+"the tolerate-missing-plugins annotation waives plugins required by annotations",
		Options{Validator: validate.Config{TolerateMissingPluginsAnnotation: tolerateAnnotation}}, func(s *S) {
			annotated := map[string]string{requiredAnnotation + "/pod": `["xyzzy"]`}
			_, err := s.create(newPod("pod0", annotated), newCtr("pod0", "ctr0"))
			s.failsWith("CreateContainer without xyzzy", err, codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "xyzzy")
			annotated[tolerateAnnotation] = "true"
			s.mustCreate(newPod("pod1", annotated), newCtr("pod1", "ctr1"))
		})
	// docs/PROTOCOL.md §10: the toleration never waives a plugin that asked
	// for fail itself (pod authors control annotations).
	add(Gap, g, rp+"the tolerate-missing-plugins annotation never waives a plugin that asked for fail itself",
		Options{Validator: validate.Config{TolerateMissingPluginsAnnotation: tolerateAnnotation}}, func(s *S) {
			s.Start("10", "strict", policy(true, true), shortTimeout(), blockOn("CreateContainer"))
			pod := newPod("pod0", map[string]string{tolerateAnnotation: "true"})
			_, err := s.create(pod, newCtr("pod0", "ctr0"))
			s.failsWith("CreateContainer of a tolerating pod with an unavailable fail plugin", err,
				codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "10-strict")
		})

	add(Gap, g, "validators see the pristine container, the merged adjustment, the owners and every registered plugin", Options{}, func(s *S) {
		var got *nriv1beta1.ValidateContainerAdjustmentRequest
		s.Start("00", "adjuster", adjustingPlugin("annotation", "00", "adjuster", false))
		s.Start("10", "bystander", events(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX))
		s.Start("20", "validator", events(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT),
			onValidate(func(_ context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
				got = req
				return &nriv1beta1.ValidateContainerAdjustmentResponse{}, nil
			}))
		pod := newPod("pod0", nil)
		s.runPod(pod)
		rsp := s.mustCreate(pod, newCtr("pod0", "ctr0"))
		if got == nil {
			s.Fatal("the validator was not called")
		}
		if _, ok := got.GetContainer().GetAnnotations()["key"]; ok {
			s.Errorf("the validator saw the adjusted container, not the pristine one: %v", got.GetContainer().GetAnnotations())
		}
		protoEq(s, "validated adjustment", got.GetAdjust(), rsp.GetAdjust())
		if o, ok := annotationOwner(got, "key"); !ok || o != "00-adjuster" {
			s.Errorf("owner of annotation key: %q, want 00-adjuster", o)
		}
		var plugins []string
		for _, p := range got.GetPlugins() {
			plugins = append(plugins, p.GetIndex()+"-"+p.GetName())
		}
		slices.Sort(plugins)
		eq(s, "plugins in the validation request", plugins, []string{"00-adjuster", "10-bystander", "20-validator"})
	})
	add(Gap, g, "validators are called after every other plugin, and any rejection fails the creation", Options{}, func(s *S) {
		s.Start("00", "early-validator", onValidate(func(context.Context, *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
			return &nriv1beta1.ValidateContainerAdjustmentResponse{Reject: true, Reason: "not today"}, nil
		}))
		s.Start("10", "late-validator", onValidate(accept))
		s.Start("90", "adjuster", adjustingPlugin("annotation", "90", "adjuster", false))
		pod := newPod("pod0", nil)
		s.runPod(pod)
		s.Log().Reset()
		_, err := s.create(pod, newCtr("pod0", "ctr0"))
		s.failsWith("CreateContainer", err, codes.FailedPrecondition, "DISPATCH_OUTCOME_REJECTED",
			`validator "00-early-validator" rejected container adjustment, reason: not today`)
		eq(s, "CreateContainer before validation", s.Log().Strings()[:3],
			[]string{"00-early-validator:CreateContainer", "10-late-validator:CreateContainer", "90-adjuster:CreateContainer"})
		v := s.Log().Strings("ValidateContainerAdjustment")
		slices.Sort(v)
		eq(s, "validations (concurrent)", v, []string{"00-early-validator:ValidateContainerAdjustment", "10-late-validator:ValidateContainerAdjustment"})
	})
	add(Gap, g, "a validator timeout fails the creation and disconnects the validator; later creations go on without it", Options{}, func(s *S) {
		v := s.Start("20", "slow-validator", events(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT),
			onValidate(accept), shortTimeout(), blockOn("ValidateContainerAdjustment"))
		pod := newPod("pod0", nil)
		s.runPod(pod)
		_, err := s.create(pod, newCtr("pod0", "ctr0"))
		s.failsWith("CreateContainer with a timing-out validator", err, codes.FailedPrecondition, "DISPATCH_OUTCOME_REJECTED", "20-slow-validator")
		s.waitDone(v)
		s.mustCreate(pod, newCtr("pod0", "ctr1"))
	})
	// docs/PROTOCOL.md §11: REQUIRED_UNAVAILABLE when "a required plugin
	// (fail_request, the operator's list, or a pod annotation) was
	// unavailable or absent".
	add(Gap, g, "an operator-required plugin that times out fails the creation, and once disconnected every creating event",
		Options{Validator: validate.Config{RequiredPlugins: []string{"slow"}}}, func(s *S) {
			// Blocking CreateContainer until the call's deadline; and, since
			// an SDK registers again after the server dropped it, refusing
			// every Configure after the first: the plugin stays absent
			// (without that, the check below raced the re-registration).
			var configured atomic.Int32
			p := s.Start("10", "slow", shortTimeout(), handle(func(ctx context.Context, method string, _ proto.Message) error {
				switch {
				case method == "CreateContainer":
					<-ctx.Done()
					return status.FromContextError(ctx.Err()).Err()
				case method == "Configure" && configured.Add(1) > 1:
					return status.Error(codes.Unavailable, "the scenario keeps this plugin away after its first registration")
				}
				return nil
			}))
			pod := newPod("pod0", nil)
			s.runPod(pod)
			_, err := s.create(pod, newCtr("pod0", "ctr0"))
			s.failsWith("CreateContainer with the required plugin timing out", err, codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "slow")
			s.waitDone(p)
			err = s.send("RunPodSandbox", newPod("pod1", nil), nil)
			s.failsWith("RunPodSandbox after the required plugin was disconnected", err, codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "slow")
		})
	add(Gap, g, "a validator's error status fails the creation whatever its failure policy", Options{}, func(s *S) {
		s.Start("20", "broken-validator", events(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT), onValidate(accept),
			policy(false, true), failOn(fmt.Errorf("validator crashed"), "ValidateContainerAdjustment"))
		pod := newPod("pod0", nil)
		s.runPod(pod)
		_, err := s.create(pod, newCtr("pod0", "ctr0"))
		s.failsWith("CreateContainer", err, codes.FailedPrecondition, "DISPATCH_OUTCOME_REJECTED", "20-broken-validator", "validator crashed")
	})
	add(Gap, g, "no validation for UpdateContainer and StopContainer", Options{}, func(s *S) {
		s.Start("20", "validator", onValidate(func(context.Context, *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
			return &nriv1beta1.ValidateContainerAdjustmentResponse{Reject: true, Reason: "never"}, nil
		}))
		pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
		s.runPod(pod)
		s.must("UpdateContainer", s.send("UpdateContainer", pod, ctr))
		s.must("StopContainer", s.send("StopContainer", pod, ctr))
		eq(s, "validations", s.Log().Strings("ValidateContainerAdjustment"), nil)
	})
}

// shortTimeout makes a plugin ask for a short request timeout, so that a
// plugin that blocks times out quickly while the others keep the default.
func shortTimeout() Opt {
	return timeouts(&nriv1beta1.Timeouts{Request: durationpb.New(shortCall)})
}
