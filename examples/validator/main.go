// Command validator is an example validating NRI plugin. It sees the merged
// result of every container creation, after all other plugins adjusted it,
// and rejects it when
//
//   - a plugin injected OCI hooks and the pod does not allow them with the
//     annotation allow-oci-hooks.noderesource.dev: "true" (scoped with
//     "/container.<name>" or "/pod" like every NRI annotation), or
//   - a plugin added a mount of a host path outside the allowed mount
//     sources.
//
// The rejection names the plugin that made the change. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	yaml "go.yaml.in/yaml/v3"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/plugin"
)

// AllowHooksKey is the annotation that lets a pod's containers get OCI
// hooks from plugins.
const AllowHooksKey = "allow-oci-hooks.noderesource.dev"

// Config is the validator's configuration: flags, or the YAML content of
// its drop-in file when nrid launches it (ConfigureRequest.config).
type Config struct {
	// AllowedMountSources are the host directories plugins may mount from
	// (the directory itself and everything below it). Empty allows every
	// source.
	AllowedMountSources []string `yaml:"allowed_mount_sources"`
	// AllowOCIHooks accepts hooks without the pod annotation.
	AllowOCIHooks bool `yaml:"allow_oci_hooks"`
}

// validator is the plugin.
type validator struct {
	log *slog.Logger

	mu  sync.Mutex
	cfg Config
}

// Configure applies the drop-in configuration, if there is one.
func (v *validator) Configure(_ context.Context, req *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	if strings.TrimSpace(req.GetConfig()) == "" {
		return nil, nil
	}
	var cfg Config
	if err := yaml.Unmarshal([]byte(req.GetConfig()), &cfg); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	v.setConfig(cfg)
	v.log.Info("configured", "allowed_mount_sources", cfg.AllowedMountSources, "allow_oci_hooks", cfg.AllowOCIHooks)
	return nil, nil
}

func (v *validator) setConfig(cfg Config) {
	for i, s := range cfg.AllowedMountSources {
		cfg.AllowedMountSources[i] = filepath.Clean(s)
	}
	v.mu.Lock()
	v.cfg = cfg
	v.mu.Unlock()
}

func (v *validator) config() Config {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cfg
}

// ValidateContainerAdjustment rejects forbidden hooks and mounts; the
// returned error is the rejection's reason.
func (v *validator) ValidateContainerAdjustment(_ context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
	cfg := v.config()
	ctr := req.GetContainer()
	owners := req.GetOwners().GetOwners()[ctr.GetId()]

	if hooks := req.GetAdjust().GetHooks(); hasHooks(hooks) && !cfg.AllowOCIHooks {
		value, _ := nri.EffectiveAnnotation(req.GetPod().GetAnnotations(), AllowHooksKey, ctr.GetName())
		if ok, _ := strconv.ParseBool(value); !ok {
			by := owners.GetSimple()[int32(nriv1beta1.Field_FIELD_OCI_HOOKS)]
			v.log.Info("rejecting OCI hooks", "container", ctr.GetName(), "plugins", by)
			return nil, fmt.Errorf("OCI hooks injected by %s are not allowed for container %s (annotate the pod with %s: \"true\")",
				by, ctr.GetName(), AllowHooksKey)
		}
	}
	if len(cfg.AllowedMountSources) > 0 {
		for _, m := range req.GetAdjust().GetMounts() {
			if _, removed := plugin.IsMarkedForRemoval(m.GetDestination()); removed || !filepath.IsAbs(m.GetSource()) {
				continue
			}
			if !allowed(cfg.AllowedMountSources, m.GetSource()) {
				by := owners.GetCompound()[int32(nriv1beta1.Field_FIELD_MOUNTS)].GetOwners()[m.GetDestination()]
				v.log.Info("rejecting mount", "container", ctr.GetName(), "source", m.GetSource(), "plugin", by)
				return nil, fmt.Errorf("mount of %s at %s by %s: the source is outside the allowed mount sources %v",
					m.GetSource(), m.GetDestination(), by, cfg.AllowedMountSources)
			}
		}
	}
	return nil, nil
}

func hasHooks(h *nriv1beta1.Hooks) bool {
	return len(h.GetPrestart())+len(h.GetCreateRuntime())+len(h.GetCreateContainer())+
		len(h.GetStartContainer())+len(h.GetPoststart())+len(h.GetPoststop()) > 0
}

// allowed reports whether source is one of dirs or below one of them.
func allowed(dirs []string, source string) bool {
	source = filepath.Clean(source)
	return slices.ContainsFunc(dirs, func(d string) bool {
		return source == d || d == "/" || strings.HasPrefix(source, d+"/")
	})
}

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "validator:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("validator", flag.ContinueOnError)
	std := plugin.Flags{Name: "validator", Index: "90"}
	std.Register(fs)
	sources := fs.String("allowed-mount-sources", "", "comma-separated host directories plugins may mount from (empty: any)")
	hooks := fs.Bool("allow-oci-hooks", false, "accept OCI hooks without the pod annotation")
	verbose := fs.Bool("verbose", false, "log at debug level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	v := &validator{log: log}
	cfg := Config{AllowOCIHooks: *hooks}
	for _, s := range strings.Split(*sources, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.AllowedMountSources = append(cfg.AllowedMountSources, s)
		}
	}
	v.setConfig(cfg)
	p, err := plugin.New(v, append(std.Options(), plugin.WithLogger(log))...)
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
