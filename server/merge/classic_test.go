package merge_test

// Drives the real classic NRI (github.com/containerd/nri pkg/adaptation)
// with builtin plugins that return given responses, and runs the same
// responses through this package, so that the differential tests can compare
// the two. v1alpha1 and v1beta1 are wire-compatible: messages are converted
// by marshalling.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/adaptation/builtin"
	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/merge"
)

type quietLogger struct{}

func (quietLogger) Debugf(context.Context, string, ...interface{}) {}
func (quietLogger) Infof(context.Context, string, ...interface{})  {}
func (quietLogger) Warnf(context.Context, string, ...interface{})  {}
func (quietLogger) Errorf(context.Context, string, ...interface{}) {}

var quiet sync.Once

// convert re-types a message through its wire form.
func convert[T proto.Message](t testing.TB, from proto.Message, to T) T {
	t.Helper()
	if from == nil || !from.ProtoReflect().IsValid() {
		var zero T
		return zero
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(from)
	if err != nil {
		t.Fatalf("marshal %T: %v", from, err)
	}
	if err := proto.Unmarshal(b, to); err != nil {
		t.Fatalf("unmarshal %T: %v", to, err)
	}
	return to
}

// plug is one plugin of a scenario: its full name and its response (nil:
// the plugin returns no response).
type plug[R proto.Message] struct {
	name string
	rsp  R
}

func splitName(t testing.TB, full string) (idx, base string) {
	idx, base, ok := strings.Cut(full, "-")
	if !ok {
		t.Fatalf("bad plugin name %q", full)
	}
	return idx, base
}

// outcome is everything observable about one merge, in v1beta1 types.
type outcome struct {
	err       string
	adjust    *nriv1beta1.ContainerAdjustment
	updates   []*nriv1beta1.ContainerUpdate
	evict     []*nriv1beta1.ContainerEviction
	owners    *nriv1beta1.OwningPlugins // CreateContainer, success only
	final     *nriv1beta1.Container     // request container after merging (success only)
	pristine  *nriv1beta1.Container     // CreateContainer, success only
	seen      []*nriv1beta1.Container   // container each plugin was sent
	resources *nriv1beta1.LinuxResources
	seenRes   []*nriv1beta1.LinuxResources
}

func startClassic(t testing.TB, plugins ...*builtin.BuiltinPlugin) *adaptation.Adaptation {
	t.Helper()
	quiet.Do(func() { nrilog.Set(quietLogger{}) })
	dir := t.TempDir()
	syncFn := func(ctx context.Context, cb adaptation.SyncCB) error {
		_, err := cb(ctx, nil, nil)
		return err
	}
	updateFn := func(context.Context, []*adaptation.ContainerUpdate) ([]*adaptation.ContainerUpdate, error) {
		return nil, nil
	}
	r, err := adaptation.New("merge-differential", "v0", syncFn, updateFn,
		adaptation.WithPluginPath(dir+"/plugins"),
		adaptation.WithPluginConfigPath(dir+"/conf"),
		adaptation.WithSocketPath(dir+"/nri.sock"),
		adaptation.WithDisabledExternalConnections(),
		adaptation.WithBuiltinPlugins(plugins...),
	)
	if err != nil {
		t.Fatalf("classic New: %v", err)
	}
	if err := r.Start(); err != nil {
		t.Fatalf("classic Start: %v", err)
	}
	t.Cleanup(r.Stop)
	return r
}

func classicCreate(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container, plugins []plug[*nriv1beta1.CreateContainerResponse]) outcome {
	t.Helper()
	var (
		out      outcome
		validate *api.ValidateContainerAdjustmentRequest
		builtins []*builtin.BuiltinPlugin
	)
	for _, p := range plugins {
		idx, base := splitName(t, p.name)
		rsp := p.rsp
		builtins = append(builtins, &builtin.BuiltinPlugin{Base: base, Index: idx, Handlers: builtin.BuiltinHandlers{
			CreateContainer: func(_ context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
				out.seen = append(out.seen, convert(t, req.Container, &nriv1beta1.Container{}))
				if rsp == nil {
					return nil, nil
				}
				return convert(t, rsp, &api.CreateContainerResponse{}), nil
			},
		}})
	}
	builtins = append(builtins, &builtin.BuiltinPlugin{Base: "validator", Index: "99", Handlers: builtin.BuiltinHandlers{
		ValidateContainerAdjustment: func(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
			validate = proto.Clone(req).(*api.ValidateContainerAdjustmentRequest)
			return nil
		},
	}})
	r := startClassic(t, builtins...)
	req := &api.CreateContainerRequest{
		Pod:       convert(t, pod, &api.PodSandbox{}),
		Container: convert(t, ctr, &api.Container{}),
	}
	rsp, err := r.CreateContainer(context.Background(), req)
	if err != nil {
		out.err = err.Error()
		return out
	}
	res := convert(t, rsp, &nriv1beta1.AdaptationServiceCreateContainerResponse{})
	out.adjust, out.updates, out.evict = res.Adjust, res.Update, res.Evict
	out.final = convert(t, req.Container, &nriv1beta1.Container{})
	if validate == nil {
		t.Fatalf("classic validator was not called")
	}
	out.owners = convert(t, validate.Owners, &nriv1beta1.OwningPlugins{})
	out.pristine = convert(t, validate.Container, &nriv1beta1.Container{})
	return out
}

func oursCreate(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container, plugins []plug[*nriv1beta1.CreateContainerResponse]) (outcome, []*nriv1beta1.FieldChange) {
	t.Helper()
	var out outcome
	req := &nriv1beta1.CreateContainerRequest{Pod: pod.CloneVT(), Container: ctr.CloneVT()}
	c := merge.NewCreate(req)
	var changes []*nriv1beta1.FieldChange
	for _, p := range plugins {
		before := req.Container.CloneVT()
		out.seen = append(out.seen, before)
		changed, err := c.Apply(p.name, p.rsp.CloneVT(), &changes)
		if err != nil {
			out.err = err.Error()
			return out, changes
		}
		if !changed && !proto.Equal(before, req.Container) {
			t.Errorf("%s: Apply reported no change but the request container changed", p.name)
		}
	}
	res := c.Result()
	assertNoEmptySubMessages(t, res)
	out.adjust, out.updates, out.evict = res.Adjust, res.Update, res.Evict
	out.owners = c.Owners()
	out.final = req.Container
	out.pristine = c.Pristine()
	return out, changes
}

func classicUpdate(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container, requested *nriv1beta1.LinuxResources, plugins []plug[*nriv1beta1.UpdateContainerResponse]) outcome {
	t.Helper()
	var (
		out      outcome
		builtins []*builtin.BuiltinPlugin
	)
	for _, p := range plugins {
		idx, base := splitName(t, p.name)
		rsp := p.rsp
		builtins = append(builtins, &builtin.BuiltinPlugin{Base: base, Index: idx, Handlers: builtin.BuiltinHandlers{
			UpdateContainer: func(_ context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
				out.seenRes = append(out.seenRes, convert(t, req.LinuxResources, &nriv1beta1.LinuxResources{}))
				if rsp == nil {
					return nil, nil
				}
				return convert(t, rsp, &api.UpdateContainerResponse{}), nil
			},
		}})
	}
	r := startClassic(t, builtins...)
	req := &api.UpdateContainerRequest{
		Pod:       convert(t, pod, &api.PodSandbox{}),
		Container: convert(t, ctr, &api.Container{}),
	}
	if requested != nil {
		req.LinuxResources = convert(t, requested, &api.LinuxResources{})
	}
	rsp, err := r.UpdateContainer(context.Background(), req)
	if err != nil {
		out.err = err.Error()
		return out
	}
	// Classic appends the target's update last; a nil last element means no
	// plugin touched the target, whose resources are then the requested ones.
	n := len(rsp.Update)
	if n == 0 {
		t.Fatalf("classic UpdateContainer returned no target element")
	}
	for _, u := range rsp.Update[:n-1] {
		out.updates = append(out.updates, convert(t, u, &nriv1beta1.ContainerUpdate{}))
	}
	if last := rsp.Update[n-1]; last != nil {
		out.resources = convert(t, last.GetLinux().GetResources(), &nriv1beta1.LinuxResources{})
	} else {
		out.resources = convert(t, req.LinuxResources, &nriv1beta1.LinuxResources{})
	}
	return out
}

func oursUpdate(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container, requested *nriv1beta1.LinuxResources, plugins []plug[*nriv1beta1.UpdateContainerResponse]) outcome {
	t.Helper()
	var out outcome
	req := &nriv1beta1.UpdateContainerRequest{Pod: pod.CloneVT(), Container: ctr.CloneVT(), LinuxResources: requested.CloneVT()}
	u := merge.NewUpdate(req)
	var changes []*nriv1beta1.FieldChange
	for _, p := range plugins {
		before := req.LinuxResources.CloneVT()
		out.seenRes = append(out.seenRes, before)
		changed, err := u.Apply(p.name, p.rsp.CloneVT(), &changes)
		if err != nil {
			out.err = err.Error()
			return out
		}
		if !changed && !proto.Equal(before, req.LinuxResources) {
			t.Errorf("%s: Apply reported no change but the request resources changed", p.name)
		}
	}
	res := u.Result()
	if res.LinuxResources == nil {
		t.Fatalf("UpdateContainer result without LinuxResources")
	}
	out.updates, out.evict, out.resources = res.Update, res.Evict, res.LinuxResources
	return out
}

func classicStop(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container, plugins []plug[*nriv1beta1.StopContainerResponse]) outcome {
	t.Helper()
	var builtins []*builtin.BuiltinPlugin
	for _, p := range plugins {
		idx, base := splitName(t, p.name)
		rsp := p.rsp
		builtins = append(builtins, &builtin.BuiltinPlugin{Base: base, Index: idx, Handlers: builtin.BuiltinHandlers{
			StopContainer: func(_ context.Context, _ *api.StopContainerRequest) (*api.StopContainerResponse, error) {
				if rsp == nil {
					return nil, nil
				}
				return convert(t, rsp, &api.StopContainerResponse{}), nil
			},
		}})
	}
	r := startClassic(t, builtins...)
	var out outcome
	rsp, err := r.StopContainer(context.Background(), &api.StopContainerRequest{
		Pod:       convert(t, pod, &api.PodSandbox{}),
		Container: convert(t, ctr, &api.Container{}),
	})
	if err != nil {
		out.err = err.Error()
		return out
	}
	res := convert(t, rsp, &nriv1beta1.AdaptationServiceStopContainerResponse{})
	out.updates = res.Update
	return out
}

func oursStop(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container, plugins []plug[*nriv1beta1.StopContainerResponse]) outcome {
	t.Helper()
	s := merge.NewStop(&nriv1beta1.StopContainerRequest{Pod: pod, Container: ctr})
	var out outcome
	for _, p := range plugins {
		changed, err := s.Apply(p.name, p.rsp.CloneVT(), nil)
		if err != nil {
			out.err = err.Error()
			return out
		}
		if changed {
			t.Errorf("Stop.Apply reported a change")
		}
	}
	res := s.Result()
	out.updates, out.evict = res.Update, res.Evict
	return out
}

// prunable are the messages whose empty instances carry no meaning (classic
// NRI pre-creates them); normalize drops them on both sides. Wrappers and
// other messages, where empty means "set to zero", are kept.
var prunable = map[protoreflect.FullName]bool{
	"nri.v1beta1.ContainerAdjustment":      true,
	"nri.v1beta1.LinuxContainerAdjustment": true,
	"nri.v1beta1.LinuxResources":           true,
	"nri.v1beta1.LinuxMemory":              true,
	"nri.v1beta1.LinuxCPU":                 true,
	"nri.v1beta1.LinuxRdt":                 true,
	"nri.v1beta1.Hooks":                    true,
	"nri.v1beta1.LinuxContainerUpdate":     true,
	"nri.v1beta1.LinuxContainer":           true,
}

// prune clears the prunable singular message fields of m that are empty,
// recursively.
func prune(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				prune(l.Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				prune(mv.Message())
				return true
			})
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			sub := v.Message()
			prune(sub)
			if prunable[fd.Message().FullName()] && proto.Size(sub.Interface()) == 0 {
				m.Clear(fd)
			}
		}
		return true
	})
}

// norm returns a normalized copy of m: empty prunable sub-messages dropped,
// container namespaces sorted by type (classic rebuilds them from a map).
func norm[T proto.Message](m T) T {
	if !m.ProtoReflect().IsValid() {
		return m
	}
	c := proto.Clone(m).(T)
	prune(c.ProtoReflect())
	if ctr, ok := any(c).(*nriv1beta1.Container); ok && ctr.GetLinux() != nil {
		slices.SortStableFunc(ctr.Linux.Namespaces, func(a, b *nriv1beta1.LinuxNamespace) int {
			return strings.Compare(a.Type, b.Type)
		})
	}
	return c
}

func text(m proto.Message) string {
	if m == nil || !m.ProtoReflect().IsValid() {
		return "<nil>"
	}
	return prototext.MarshalOptions{Multiline: true}.Format(m)
}

// emptyOrNil reports whether m is nil or an empty prunable message.
func emptyOrNil(m proto.Message) bool {
	r := m.ProtoReflect()
	return !r.IsValid() || (prunable[r.Descriptor().FullName()] && proto.Size(m) == 0)
}

func eqMsg[T proto.Message](what string, a, b T) []string {
	na, nb := norm(a), norm(b)
	if proto.Equal(na, nb) || (emptyOrNil(na) && emptyOrNil(nb)) {
		return nil
	}
	return []string{fmt.Sprintf("%s differs:\n--- classic\n%s\n--- ours\n%s", what, text(na), text(nb))}
}

func eqList[T proto.Message](what string, a, b []T) []string {
	if len(a) != len(b) {
		var sa, sb []string
		for _, x := range a {
			sa = append(sa, text(norm(x)))
		}
		for _, x := range b {
			sb = append(sb, text(norm(x)))
		}
		return []string{fmt.Sprintf("%s: %d vs %d entries:\n--- classic\n%s\n--- ours\n%s", what, len(a), len(b),
			strings.Join(sa, "\n"), strings.Join(sb, "\n"))}
	}
	var d []string
	for i := range a {
		d = append(d, eqMsg(fmt.Sprintf("%s[%d]", what, i), a[i], b[i])...)
	}
	return d
}

// compare lists the differences between the classic and our outcome.
func compare(classic, ours outcome) []string {
	if classic.err != "" || ours.err != "" {
		if classic.err != ours.err {
			return []string{fmt.Sprintf("error differs:\nclassic: %q\nours:    %q", classic.err, ours.err)}
		}
		// Both failed the same way: compare what the plugins that ran saw.
		n := min(len(classic.seen), len(ours.seen))
		d := eqList("seen container", classic.seen[:n], ours.seen[:n])
		m := min(len(classic.seenRes), len(ours.seenRes))
		return append(d, eqList("seen resources", classic.seenRes[:m], ours.seenRes[:m])...)
	}
	var d []string
	d = append(d, eqMsg("adjust", classic.adjust, ours.adjust)...)
	d = append(d, eqList("updates", classic.updates, ours.updates)...)
	d = append(d, eqList("evictions", classic.evict, ours.evict)...)
	d = append(d, eqMsg("owners", classic.owners, ours.owners)...)
	d = append(d, eqMsg("final container", classic.final, ours.final)...)
	d = append(d, eqMsg("pristine container", classic.pristine, ours.pristine)...)
	d = append(d, eqList("seen container", classic.seen, ours.seen)...)
	d = append(d, eqMsg("target resources", classic.resources, ours.resources)...)
	d = append(d, eqList("seen resources", classic.seenRes, ours.seenRes)...)
	return d
}

// assertNoEmptySubMessages fails if our result holds an empty instance of a
// prunable message (the API promises nil instead).
func assertNoEmptySubMessages(t testing.TB, m proto.Message) {
	t.Helper()
	var walk func(path string, m protoreflect.Message)
	walk = func(path string, m protoreflect.Message) {
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			p := path + "." + string(fd.Name())
			switch {
			case fd.IsList() && fd.Message() != nil:
				l := v.List()
				for i := 0; i < l.Len(); i++ {
					walk(fmt.Sprintf("%s[%d]", p, i), l.Get(i).Message())
				}
			case fd.IsMap():
			case fd.Message() != nil:
				sub := v.Message()
				// Updates keep linux.resources as a frame for their fields.
				frame := fd.Message().FullName() == "nri.v1beta1.LinuxContainerUpdate" ||
					(fd.Message().FullName() == "nri.v1beta1.LinuxResources" && strings.HasSuffix(path, ".linux") && strings.Contains(path, ".update["))
				if prunable[fd.Message().FullName()] && !frame && proto.Size(sub.Interface()) == 0 {
					t.Errorf("empty sub-message %s in the result", p)
				}
				walk(p, sub)
			}
			return true
		})
	}
	walk("", m.ProtoReflect())
}
