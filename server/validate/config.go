package validate

import (
	"fmt"
	"strings"
)

// Config configures the default validator. Its TOML keys are those of classic
// NRI's default_validator section, except that there is no "enable" key:
// [Validator.Enabled] is true when any knob is set or any plugin is required,
// and false for the zero value.
type Config struct {
	// RejectOCIHookAdjustment rejects a container whose merged adjustment
	// injects OCI hooks.
	RejectOCIHookAdjustment bool `toml:"reject_oci_hook_adjustment"`
	// RejectRuntimeDefaultSeccompAdjustment rejects a seccomp policy
	// adjustment of a container that uses the runtime's default seccomp
	// profile (profile type RUNTIME_DEFAULT).
	RejectRuntimeDefaultSeccompAdjustment bool `toml:"reject_runtime_default_seccomp_adjustment"`
	// RejectUnconfinedSeccompAdjustment rejects a seccomp policy adjustment
	// of an unconfined container (profile type UNCONFINED, or no seccomp
	// profile at all).
	RejectUnconfinedSeccompAdjustment bool `toml:"reject_unconfined_seccomp_adjustment"`
	// RejectCustomSeccompAdjustment rejects a seccomp policy adjustment of a
	// container that uses a custom profile from the node (profile type
	// LOCALHOST).
	RejectCustomSeccompAdjustment bool `toml:"reject_custom_seccomp_adjustment"`
	// RejectNamespaceAdjustment rejects any adjustment of Linux namespaces,
	// removals included.
	RejectNamespaceAdjustment bool `toml:"reject_namespace_adjustment"`
	// RejectSysctlAdjustment rejects any sysctl a plugin sets. Pure removals
	// pass.
	RejectSysctlAdjustment bool `toml:"reject_sysctl_adjustment"`
	// RequiredPlugins is the operator's list of plugins that must be
	// registered for any container to be created. Each entry is a plugin
	// name ("foo"), matching any index, or a full name ("10-foo"). The
	// tolerate-missing-plugins annotation never waives these.
	//
	// This applies to every container on the node, static pods included:
	// a required plugin that is not running blocks them all.
	RequiredPlugins []string `toml:"required_plugins"`
	// TolerateMissingPluginsAnnotation is the pod annotation key whose
	// effective value "true" (see [nri.EffectiveAnnotation]) waives the plugins
	// required by the required-plugins annotation. Empty disables toleration.
	// The conventional key is [DefaultTolerateMissingPluginsAnnotation].
	TolerateMissingPluginsAnnotation string `toml:"tolerate_missing_plugins_annotation"`
}

// check reports the first invalid setting, naming its TOML key.
func (c *Config) check() error {
	seen := make(map[string]int, len(c.RequiredPlugins))
	for i, name := range c.RequiredPlugins {
		if err := checkRequiredName(name); err != nil {
			return fmt.Errorf("required_plugins[%d]: %w", i, err)
		}
		if j, dup := seen[name]; dup {
			return fmt.Errorf("required_plugins[%d]: plugin %q is already listed at required_plugins[%d]", i, name, j)
		}
		seen[name] = i
	}

	if key := c.TolerateMissingPluginsAnnotation; key != "" {
		for _, r := range key {
			if r <= ' ' || r >= 0x7f {
				return fmt.Errorf("tolerate_missing_plugins_annotation: invalid annotation key %q: contains invalid character %q", key, r)
			}
		}
		if key == RequiredPluginsAnnotation {
			return fmt.Errorf("tolerate_missing_plugins_annotation: %q is the required-plugins annotation key", key)
		}
	}

	return nil
}

// checkRequiredName accepts a plugin name ([a-zA-Z0-9_.+-]+) with an optional
// two-digit index prefix ("NN-"), which must then be followed by a name.
func checkRequiredName(name string) error {
	if name == "" {
		return fmt.Errorf("invalid plugin name: name is empty")
	}
	for _, r := range name {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		case r == '-', r == '_', r == '.', r == '+':
		default:
			return fmt.Errorf("invalid plugin name %q: contains invalid character %q", name, r)
		}
	}
	if idx, rest, ok := strings.Cut(name, "-"); ok && isIndex(idx) && rest == "" {
		return fmt.Errorf("invalid plugin name %q: index %q without a name", name, idx)
	}
	return nil
}

// isIndex reports whether s is a two-digit plugin index.
func isIndex(s string) bool {
	return len(s) == 2 && '0' <= s[0] && s[0] <= '9' && '0' <= s[1] && s[1] <= '9'
}
