// Command logger is an example NRI plugin that logs every request it
// receives, as YAML documents or JSON lines: Configure, Synchronize (once,
// with the full state), Shutdown and every lifecycle event. It changes
// nothing. By default it subscribes to every event except
// ValidateContainerAdjustment (validators fail closed: a logger should not
// be able to block containers); -events chooses. See README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	yaml "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/plugin"
)

// Config is the logger's configuration: flags, or the YAML content of its
// drop-in file when nrid launches it (ConfigureRequest.config), which
// overrides the flags.
type Config struct {
	// Format is "yaml" (the default) or "json".
	Format string `yaml:"format"`
	// Events are the events to log, by name ("CreateContainer"), or "all".
	// Empty means every event but ValidateContainerAdjustment.
	Events []string `yaml:"events"`
}

// logger is the plugin.
type logger struct {
	mu     sync.Mutex
	out    io.Writer
	format string
	events int32
}

// entry is one logged request.
type entry struct {
	Time    string `json:"time" yaml:"time"`
	Event   string `json:"event" yaml:"event"`
	Request any    `json:"request" yaml:"request"`
}

// defaultEvents is every event but validation.
var defaultEvents = nri.AllEvents &^ nri.EventMask(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT)

func newLogger(out io.Writer, cfg Config) (*logger, error) {
	l := &logger{out: out}
	if err := l.apply(cfg); err != nil {
		return nil, err
	}
	return l, nil
}

// apply checks and installs a configuration.
func (l *logger) apply(cfg Config) error {
	format := strings.ToLower(cfg.Format)
	switch format {
	case "":
		format = "yaml"
	case "yaml", "json":
	default:
		return fmt.Errorf("format %q: want yaml or json", cfg.Format)
	}
	events, err := parseEvents(cfg.Events)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.format, l.events = format, events
	l.mu.Unlock()
	return nil
}

// parseEvents turns event names into a mask (see nri.ParseEventMask).
func parseEvents(names []string) (int32, error) {
	if len(names) == 0 {
		return defaultEvents, nil
	}
	return nri.ParseEventMask(names...)
}

// dump writes one entry.
func (l *logger) dump(event string, req proto.Message) {
	js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(req)
	if err != nil {
		js = []byte(fmt.Sprintf("%q", err.Error()))
	}
	var body any
	if err := json.Unmarshal(js, &body); err != nil {
		body = err.Error()
	}
	e := entry{Time: time.Now().UTC().Format(time.RFC3339Nano), Event: event, Request: body}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []byte
	if l.format == "json" {
		out, err = json.Marshal(e)
		out = append(out, '\n')
	} else {
		out, err = yaml.Marshal(e)
		out = append([]byte("---\n"), out...)
	}
	if err != nil {
		out = []byte(fmt.Sprintf("%s: %v\n", event, err))
	}
	_, _ = l.out.Write(out)
}

// Configure applies the drop-in configuration and subscribes to the
// configured events.
func (l *logger) Configure(_ context.Context, req *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	if strings.TrimSpace(req.GetConfig()) != "" {
		var cfg Config
		if err := yaml.Unmarshal([]byte(req.GetConfig()), &cfg); err != nil {
			return nil, fmt.Errorf("configuration: %w", err)
		}
		if err := l.apply(cfg); err != nil {
			return nil, fmt.Errorf("configuration: %w", err)
		}
	}
	l.dump("Configure", req)
	l.mu.Lock()
	defer l.mu.Unlock()
	return &nriv1beta1.ConfigureResponse{Events: l.events}, nil
}

// Synchronize logs the full state.
func (l *logger) Synchronize(_ context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	l.dump("Synchronize", req)
	return nil, nil
}

// Shutdown logs why the registration ends.
func (l *logger) Shutdown(_ context.Context, req *nriv1beta1.ShutdownRequest) {
	l.dump("Shutdown", req)
}

// RunPodSandbox logs the event.
func (l *logger) RunPodSandbox(_ context.Context, req *nriv1beta1.RunPodSandboxRequest) (*nriv1beta1.RunPodSandboxResponse, error) {
	l.dump("RunPodSandbox", req)
	return nil, nil
}

// UpdatePodSandbox logs the event.
func (l *logger) UpdatePodSandbox(_ context.Context, req *nriv1beta1.UpdatePodSandboxRequest) (*nriv1beta1.UpdatePodSandboxResponse, error) {
	l.dump("UpdatePodSandbox", req)
	return nil, nil
}

// PostUpdatePodSandbox logs the event.
func (l *logger) PostUpdatePodSandbox(_ context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) (*nriv1beta1.PostUpdatePodSandboxResponse, error) {
	l.dump("PostUpdatePodSandbox", req)
	return nil, nil
}

// StopPodSandbox logs the event.
func (l *logger) StopPodSandbox(_ context.Context, req *nriv1beta1.StopPodSandboxRequest) (*nriv1beta1.StopPodSandboxResponse, error) {
	l.dump("StopPodSandbox", req)
	return nil, nil
}

// RemovePodSandbox logs the event.
func (l *logger) RemovePodSandbox(_ context.Context, req *nriv1beta1.RemovePodSandboxRequest) (*nriv1beta1.RemovePodSandboxResponse, error) {
	l.dump("RemovePodSandbox", req)
	return nil, nil
}

// CreateContainer logs the event.
func (l *logger) CreateContainer(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	l.dump("CreateContainer", req)
	return nil, nil
}

// PostCreateContainer logs the event.
func (l *logger) PostCreateContainer(_ context.Context, req *nriv1beta1.PostCreateContainerRequest) (*nriv1beta1.PostCreateContainerResponse, error) {
	l.dump("PostCreateContainer", req)
	return nil, nil
}

// StartContainer logs the event.
func (l *logger) StartContainer(_ context.Context, req *nriv1beta1.StartContainerRequest) (*nriv1beta1.StartContainerResponse, error) {
	l.dump("StartContainer", req)
	return nil, nil
}

// PostStartContainer logs the event.
func (l *logger) PostStartContainer(_ context.Context, req *nriv1beta1.PostStartContainerRequest) (*nriv1beta1.PostStartContainerResponse, error) {
	l.dump("PostStartContainer", req)
	return nil, nil
}

// UpdateContainer logs the event.
func (l *logger) UpdateContainer(_ context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
	l.dump("UpdateContainer", req)
	return nil, nil
}

// PostUpdateContainer logs the event.
func (l *logger) PostUpdateContainer(_ context.Context, req *nriv1beta1.PostUpdateContainerRequest) (*nriv1beta1.PostUpdateContainerResponse, error) {
	l.dump("PostUpdateContainer", req)
	return nil, nil
}

// StopContainer logs the event.
func (l *logger) StopContainer(_ context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
	l.dump("StopContainer", req)
	return nil, nil
}

// RemoveContainer logs the event.
func (l *logger) RemoveContainer(_ context.Context, req *nriv1beta1.RemoveContainerRequest) (*nriv1beta1.RemoveContainerResponse, error) {
	l.dump("RemoveContainer", req)
	return nil, nil
}

// ValidateContainerAdjustment logs the request and accepts (only when
// subscribed with -events).
func (l *logger) ValidateContainerAdjustment(_ context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
	l.dump("ValidateContainerAdjustment", req)
	return nil, nil
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "logger:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("logger", flag.ContinueOnError)
	std := plugin.Flags{Name: "logger", Index: "00"}
	std.Register(fs)
	format := fs.String("format", "yaml", "output format: yaml or json")
	events := fs.String("events", "", "comma-separated events to log, or all (default: every event but ValidateContainerAdjustment)")
	output := fs.String("output", "", "file to append the log to (default: standard output)")
	verbose := fs.Bool("verbose", false, "log the SDK at debug level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	out := stdout
	if *output != "" {
		f, err := os.OpenFile(*output, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer func() {
			if err := f.Close(); err != nil {
				log.Error("closing the output file", "error", err)
			}
		}()
		out = f
	}
	cfg := Config{Format: *format}
	if *events != "" {
		cfg.Events = strings.Split(*events, ",")
	}
	l, err := newLogger(out, cfg)
	if err != nil {
		return err
	}
	p, err := plugin.New(l, append(std.Options(), plugin.WithLogger(log))...)
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
