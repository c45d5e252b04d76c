// Command ulimit-adjuster is an example NRI plugin: it sets POSIX resource
// limits (ulimits) of containers, as the pod annotation
// ulimits.noderesource.dev asks (with "/container.<name>" for one container,
// "/pod" or no suffix for every container of the pod). It is the nri-grpc
// version of classic NRI's ulimit-adjuster sample. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	yaml "go.yaml.in/yaml/v3"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/plugin"
)

// UlimitsKey is the annotation key (prefix).
const UlimitsKey = "ulimits.noderesource.dev"

// validTypes are the resource limits of setrlimit(2), without "RLIMIT_".
var validTypes = map[string]bool{
	"AS": true, "CORE": true, "CPU": true, "DATA": true, "FSIZE": true, "LOCKS": true, "MEMLOCK": true,
	"MSGQUEUE": true, "NICE": true, "NOFILE": true, "NPROC": true, "RSS": true, "RTPRIO": true,
	"RTTIME": true, "SIGPENDING": true, "STACK": true,
}

// ulimit is one annotated limit.
type ulimit struct {
	Type string `yaml:"type"`
	Hard uint64 `yaml:"hard"`
	Soft uint64 `yaml:"soft"`
}

// adjuster is the plugin. It only handles CreateContainer.
type adjuster struct {
	log *slog.Logger
}

// CreateContainer sets the annotated limits. A malformed annotation, an
// unknown limit or a soft limit above the hard one vetoes the container.
func (a *adjuster) CreateContainer(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	pod, ctr := req.GetPod(), req.GetContainer()
	value, ok := nri.EffectiveAnnotation(pod.GetAnnotations(), UlimitsKey, ctr.GetName())
	if !ok {
		return nil, nil
	}
	limits, err := parse(value)
	if err != nil {
		return nil, fmt.Errorf("annotation %s for container %s: %w", UlimitsKey, ctr.GetName(), err)
	}
	adjust := plugin.NewAdjustment()
	for _, l := range limits {
		adjust.AddRlimit(l.Type, l.Hard, l.Soft)
		a.log.Info("setting ulimit", "pod", pod.GetName(), "container", ctr.GetName(), "type", l.Type, "soft", l.Soft, "hard", l.Hard)
	}
	return adjust.Response(), nil
}

// parse decodes and checks an annotation value. Types may be written
// "RLIMIT_NOFILE", "rlimit_nofile" or "nofile".
func parse(value string) ([]ulimit, error) {
	var limits []ulimit
	if err := yaml.Unmarshal([]byte(value), &limits); err != nil {
		return nil, err
	}
	for i, l := range limits {
		typ := strings.TrimPrefix(strings.ToUpper(l.Type), "RLIMIT_")
		if !validTypes[typ] {
			return nil, fmt.Errorf("unknown ulimit type %q", l.Type)
		}
		if l.Soft > l.Hard {
			return nil, fmt.Errorf("ulimit %s: soft limit %d is above the hard limit %d", l.Type, l.Soft, l.Hard)
		}
		limits[i].Type = "RLIMIT_" + typ
	}
	return limits, nil
}

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ulimit-adjuster:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ulimit-adjuster", flag.ContinueOnError)
	std := plugin.Flags{Name: "ulimit-adjuster", Index: "20"}
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

	p, err := plugin.New(&adjuster{log: log}, append(std.Options(), plugin.WithLogger(log))...)
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
