// Command device-injector is an example NRI plugin: it injects Linux
// device nodes, mounts and CDI devices into containers and sets their I/O
// priority, as pod annotations ask. It is the nri-grpc version of those
// parts of classic NRI's device-injector sample (containerd/nri
// plugins/device-injector) and gives a container the same adjustment for
// the same annotations:
//
//	devices.noderesource.dev      a YAML list of devices
//	mounts.noderesource.dev       a YAML list of mounts
//	cdi-devices.noderesource.dev  a YAML list of CDI device names
//	io-priority.noderesource.dev  a YAML I/O priority: class, priority
//
// each with a "/container.<name>" suffix for one container, or "/pod" (or
// no suffix) for every container of the pod. The sample's other
// annotations (network devices, scheduling policy, sysctls, memory policy)
// and its deprecated "*.nri.io" keys are not read. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path"
	"syscall"

	yaml "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/plugin"
)

// Annotation keys (prefixes: add "/container.<name>" or "/pod").
const (
	DevicesKey    = "devices.noderesource.dev"
	MountsKey     = "mounts.noderesource.dev"
	CDIDevicesKey = "cdi-devices.noderesource.dev"
	IOPriorityKey = "io-priority.noderesource.dev"
)

// device is an annotated device node. A file_mode, uid or gid of 0 is the
// same as none, as in classic NRI's sample: the runtime's defaults apply.
type device struct {
	Path     string `yaml:"path"`
	Type     string `yaml:"type"`
	Major    int64  `yaml:"major"`
	Minor    int64  `yaml:"minor"`
	FileMode uint32 `yaml:"file_mode"`
	UID      uint32 `yaml:"uid"`
	GID      uint32 `yaml:"gid"`
}

// ioPriority is an annotated I/O priority: class is one of IOPRIO_CLASS_NONE,
// IOPRIO_CLASS_RT, IOPRIO_CLASS_BE and IOPRIO_CLASS_IDLE (ioprio_set(2)),
// priority its level.
type ioPriority struct {
	Class    string `yaml:"class"`
	Priority int32  `yaml:"priority"`
}

// ioPrioClasses maps the annotation's class names to the API's.
var ioPrioClasses = map[string]nriv1beta1.IOPrioClass{
	"IOPRIO_CLASS_NONE": nriv1beta1.IOPrioClass_IO_PRIO_CLASS_NONE,
	"IOPRIO_CLASS_RT":   nriv1beta1.IOPrioClass_IO_PRIO_CLASS_RT,
	"IOPRIO_CLASS_BE":   nriv1beta1.IOPrioClass_IO_PRIO_CLASS_BE,
	"IOPRIO_CLASS_IDLE": nriv1beta1.IOPrioClass_IO_PRIO_CLASS_IDLE,
}

// mount is an annotated mount.
type mount struct {
	Source      string   `yaml:"source"`
	Destination string   `yaml:"destination"`
	Type        string   `yaml:"type"`
	Options     []string `yaml:"options"`
}

// injector is the plugin. It only handles CreateContainer.
type injector struct {
	log *slog.Logger
}

// CreateContainer adjusts a container with the devices, mounts and CDI
// devices annotated for it. A malformed annotation vetoes the container.
func (i *injector) CreateContainer(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	pod, ctr := req.GetPod(), req.GetContainer()
	annotations := pod.GetAnnotations()
	adjust := plugin.NewAdjustment()

	var devices []device
	if err := lookup(annotations, DevicesKey, ctr.GetName(), &devices); err != nil {
		return nil, err
	}
	for _, d := range devices {
		dev, err := d.toNRI()
		if err != nil {
			return nil, fmt.Errorf("annotation %s: %w", DevicesKey, err)
		}
		adjust.AddDevice(dev)
		i.log.Info("injecting device", "pod", pod.GetName(), "container", ctr.GetName(), "path", d.Path)
	}

	var mounts []mount
	if err := lookup(annotations, MountsKey, ctr.GetName(), &mounts); err != nil {
		return nil, err
	}
	for _, m := range mounts {
		if !path.IsAbs(m.Destination) || m.Source == "" {
			return nil, fmt.Errorf("annotation %s: mount %q -> %q: needs a source and an absolute destination",
				MountsKey, m.Source, m.Destination)
		}
		adjust.AddMount(&nriv1beta1.Mount{Source: m.Source, Destination: m.Destination, Type: m.Type, Options: m.Options})
		i.log.Info("injecting mount", "pod", pod.GetName(), "container", ctr.GetName(), "source", m.Source, "destination", m.Destination)
	}

	var cdi []string
	if err := lookup(annotations, CDIDevicesKey, ctr.GetName(), &cdi); err != nil {
		return nil, err
	}
	for _, name := range cdi {
		adjust.AddCDIDevice(&nriv1beta1.CDIDevice{Name: name})
		i.log.Info("injecting CDI device", "pod", pod.GetName(), "container", ctr.GetName(), "name", name)
	}
	var prio *ioPriority
	if err := lookup(annotations, IOPriorityKey, ctr.GetName(), &prio); err != nil {
		return nil, err
	}
	if prio != nil {
		// An unknown class sets no priority, with a warning, as in the
		// classic sample.
		if class, ok := ioPrioClasses[prio.Class]; ok {
			adjust.SetLinuxIOPriority(&nriv1beta1.LinuxIOPriority{Class: class, Priority: prio.Priority})
			i.log.Info("setting I/O priority", "pod", pod.GetName(), "container", ctr.GetName(), "class", prio.Class, "priority", prio.Priority)
		} else {
			i.log.Warn("unknown I/O priority class; no I/O priority set", "pod", pod.GetName(), "container", ctr.GetName(),
				"annotation", IOPriorityKey, "class", untrustedShort(prio.Class))
		}
	}
	return adjust.Response(), nil
}

// untrustedShort quotes at most the first 64 bytes of an annotated value.
func untrustedShort(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q... (%d bytes)", s[:64], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// lookup decodes the effective annotation key of container ctr into out;
// it leaves out alone when there is none.
func lookup(annotations map[string]string, key, ctr string, out any) error {
	value, ok := nri.EffectiveAnnotation(annotations, key, ctr)
	if !ok {
		return nil
	}
	if err := yaml.Unmarshal([]byte(value), out); err != nil {
		return fmt.Errorf("annotation %s for container %s: %w", key, ctr, err)
	}
	return nil
}

// toNRI converts an annotated device, checking it.
func (d device) toNRI() (*nriv1beta1.LinuxDevice, error) {
	if !path.IsAbs(d.Path) {
		return nil, fmt.Errorf("device path %q is not absolute", d.Path)
	}
	switch d.Type {
	case "c", "b", "u", "p":
	default:
		return nil, fmt.Errorf("device %s: type %q is not one of c, b, u, p", d.Path, d.Type)
	}
	out := &nriv1beta1.LinuxDevice{Path: d.Path, Type: d.Type, Major: d.Major, Minor: d.Minor}
	if d.FileMode != 0 {
		out.FileMode = wrapperspb.UInt32(d.FileMode)
	}
	if d.UID != 0 {
		out.Uid = wrapperspb.UInt32(d.UID)
	}
	if d.GID != 0 {
		out.Gid = wrapperspb.UInt32(d.GID)
	}
	return out, nil
}

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "device-injector:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("device-injector", flag.ContinueOnError)
	std := plugin.Flags{Name: "device-injector", Index: "10"}
	std.Register(fs)
	verbose := fs.Bool("verbose", false, "log at debug level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	p, err := plugin.New(&injector{log: log}, append(std.Options(), plugin.WithLogger(log))...)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := p.Run(ctx); err != nil && !errors.Is(err, plugin.ErrReplaced) {
		return err
	}
	return nil
}
