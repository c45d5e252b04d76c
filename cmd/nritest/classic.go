package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/nri-grpc/nri-grpc/bridge"
)

// Classic plugins (-classic) are launched as nrid launches those of
// bridge.classic_plugin_dir: the bridge's plugin side starts "NN-name"
// from a directory under the supervisor, with NRI_PLUGIN_NAME,
// NRI_PLUGIN_IDX and NRI_PLUGIN_SOCKET=3 (one end of a socketpair), and
// registers the plugin with the server in process. nritest writes a
// one-line launcher script "NN-name" that exports nritest's environment
// (unless -clean-env) and the -env flags and execs CMD.

// classicLaunch is the running plugin side.
type classicLaunch struct {
	cancel context.CancelFunc
}

func (c *classicLaunch) stop() { c.cancel() }

// shQuote quotes s for sh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// launcherScript returns the script that starts CMD with the environment.
func (h *pluginHarness) launcherScript() string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# nritest: the classic plugin under test\n")
	for _, kv := range h.env(nil) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t\n'\"$=;&|()<>`\\") {
			continue
		}
		b.WriteString("export " + k + "=" + shQuote(v) + "\n")
	}
	b.WriteString("exec " + shQuote(h.o.path))
	for _, a := range h.o.cmd[1:] {
		b.WriteString(" " + shQuote(a))
	}
	b.WriteString("\n")
	return b.String()
}

// launchClassic starts the bridge's plugin side on s and launches the
// classic plugin through it (once: a classic plugin cannot reconnect).
func (h *pluginHarness) launchClassic(_ context.Context, s *nriServer) error {
	h.mu.Lock()
	running := h.classic != nil
	h.mu.Unlock()
	if running {
		return errors.New("the classic plugin side runs already")
	}
	ps, err := bridge.NewPluginSide(s.srv, bridge.WithPluginLogger(h.cfg.log.With("component", "bridge-plugins")),
		bridge.WithRegistrationTimeout(h.o.registerWait))
	if err != nil {
		return err
	}
	dir, confDir := filepath.Join(h.cfg.dir, "classic"), filepath.Join(h.cfg.dir, "classic-conf")
	for _, d := range []string{dir, confDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, h.o.full), []byte(h.launcherScript()), 0o755); err != nil {
		return err
	}
	if h.o.config != nil {
		if err := os.WriteFile(filepath.Join(confDir, h.o.full+".conf"), h.o.config, 0o644); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(h.supCtx)
	h.mu.Lock()
	h.classic = &classicLaunch{cancel: cancel}
	h.mu.Unlock()
	return ps.Launch(ctx, h.sup, dir, confDir)
}
