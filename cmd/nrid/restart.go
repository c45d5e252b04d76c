package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/policy"
	"github.com/nri-grpc/nri-grpc/server"
)

// rosterFile is the file in server.state_dir that lists the plugins that
// were registered, for the restart gate.
const rosterFile = "plugins.json"

// maxRoster bounds what nrid reads back: the file is nrid's own, but a
// state directory is no place to trust blindly.
const maxRoster = 1 << 20

// rosterEntry is one registered plugin.
type rosterEntry struct {
	// Plugin is "NN-name".
	Plugin string `json:"plugin"`
	// Required is the plugin's effective failure policy "fail".
	Required bool `json:"required,omitempty"`
	// Selectors are the plugin's event selectors (selectors.go): while it
	// is absent after a restart, it is required only for what they select.
	Selectors []rosterSelector `json:"selectors,omitempty"`
	// SelfConnected is a classic plugin that connected to
	// bridge.plugin_socket by itself (nrid did not launch it): pkg/stub
	// ends with its connection and never reconnects, so a restart does not
	// wait for it unless it is required (planGate).
	SelfConnected bool `json:"self_connected,omitempty"`
	// Missed is a required plugin that a restart gate went on without: it
	// stays required until it is back, but no later gate waits for it.
	Missed bool `json:"missed,omitempty"`
}

// rosterDoc is the file's content.
type rosterDoc struct {
	Plugins []rosterEntry `json:"plugins"`
}

// readyEntries lists the ready plugins of plugins, once each.
func readyEntries(plugins []*nriv1beta1.PluginInfo) []rosterEntry {
	out := []rosterEntry{}
	for _, p := range plugins {
		if p.GetState() != nriv1beta1.PluginState_PLUGIN_STATE_READY {
			continue
		}
		e := rosterEntry{Plugin: p.GetPlugin().GetIndex() + "-" + p.GetPlugin().GetName(), Required: p.GetFailurePolicy().GetFailRequest(),
			Selectors: toRoster(p.GetSelectors()), SelfConnected: selfConnected(p)}
		if !slices.ContainsFunc(out, func(o rosterEntry) bool { return o.Plugin == e.Plugin }) {
			out = append(out, e)
		}
	}
	return out
}

// selfConnected reports whether p is a classic plugin that connected to
// the bridge's plugin socket by itself: the bridge registers the classic
// plugins it launched under their launch slot ("launch:NN-name"), the
// others under their peer's credentials.
func selfConnected(p *nriv1beta1.PluginInfo) bool {
	return p.GetKind() == nriv1beta1.PluginKind_PLUGIN_KIND_CLASSIC && !strings.HasPrefix(p.GetIdentity(), "launch:")
}

// planGate splits the roster read at a start into the plugins the restart
// gate (and a takeover's hold on events) waits for and those it does not:
// the [[plugin]] entry's wait_on_restart decides if it says; otherwise a
// required plugin an earlier gate went on without is not waited for again
// (it stays required), a required plugin is, a classic plugin that
// connected by itself is not (pkg/stub never reconnects), and every other
// plugin is: gRPC plugins (the SDKs register again within 200 ms of nrid
// serving) and the plugins nrid launches itself, gRPC or classic.
func planGate(gate []rosterEntry, p *policy.Policy) (wait, skip []rosterEntry) {
	for _, e := range gate {
		w, set := p.WaitOnRestart(e.Plugin)
		if !set {
			w = !e.Missed && (e.Required || p.Required(e.Plugin) || !e.SelfConnected)
		}
		if w {
			wait = append(wait, e)
		} else {
			skip = append(skip, e)
		}
	}
	return wait, skip
}

// roster keeps the list of registered plugins in server.state_dir, so
// that a restarted nrid knows whom to wait for (the restart gate): written
// whenever a plugin registers or unregisters, never while nrid stops (its
// own stop unregisters everybody; the list must be the one from before).
type roster struct {
	path string
	log  *slog.Logger
	// last is what was stored last; owed are the required plugins the
	// restart gate went on without, kept until they are back. Only the
	// goroutine that stores uses them (keep, after the gate).
	last []rosterEntry
	owed map[string]bool
}

// owe keeps the required plugins the restart gate went on without in the
// roster until they are back: nrid keeps them required (RequireUntilRegistered),
// and so must the nrid after the next restart.
func (r *roster) owe(missing []rosterEntry) {
	if r.owed == nil {
		r.owed = map[string]bool{}
	}
	for _, e := range missing {
		if e.Required {
			e.Missed = true
			r.owed[e.Plugin] = true
			r.last = append(r.last, e)
		}
	}
}

// entries is what the roster records for plugins: the ready plugins, plus
// those of the last record that are registered but synchronizing again (a
// runtime resync or a requested one: they never left) and the owed ones
// still absent. A plugin that unregistered is forgotten.
func (r *roster) entries(plugins []*nriv1beta1.PluginInfo) []rosterEntry {
	out := readyEntries(plugins)
	for _, e := range out {
		delete(r.owed, e.Plugin)
	}
	state := map[string]nriv1beta1.PluginState{}
	for _, p := range plugins {
		name := p.GetPlugin().GetIndex() + "-" + p.GetPlugin().GetName()
		if p.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_SYNCHRONIZING || state[name] == 0 {
			state[name] = p.GetState()
		}
	}
	for _, e := range r.last {
		if slices.ContainsFunc(out, func(o rosterEntry) bool { return o.Plugin == e.Plugin }) {
			continue
		}
		st, present := state[e.Plugin]
		if (present && st == nriv1beta1.PluginState_PLUGIN_STATE_SYNCHRONIZING) || (!present && r.owed[e.Plugin]) {
			out = append(out, e)
		}
	}
	r.last = out
	return out
}

func newRoster(dir string, log *slog.Logger) (*roster, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("server.state_dir: %w", err)
	}
	return &roster{path: filepath.Join(dir, rosterFile), log: log}, nil
}

// load returns the plugins the previous nrid had registered (none when
// there is no file).
func (r *roster) load() ([]rosterEntry, error) {
	f, err := os.Open(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	data, err := io.ReadAll(io.LimitReader(f, maxRoster+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxRoster {
		return nil, fmt.Errorf("%s: larger than %d bytes", r.path, maxRoster)
	}
	var out rosterDoc
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", r.path, err)
	}
	return out.Plugins, nil
}

// store writes the registered plugins (entries) atomically (a temporary file renamed
// over the old one).
func (r *roster) store(plugins []*nriv1beta1.PluginInfo) ([]string, error) {
	out := rosterDoc{Plugins: r.entries(plugins)}
	names := make([]string, len(out.Plugins))
	for i, e := range out.Plugins {
		names[i] = e.Plugin
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return nil, err
	}
	return names, os.Rename(tmp, r.path)
}

// keep stores the roster at every registration change until ctx ends;
// it closes done when it returns. nrid's stop waits for done before it
// unregisters the plugins, so the roster keeps the set from before.
func (r *roster) keep(ctx context.Context, srv *server.Server, done chan<- struct{}) {
	defer close(done)
	for ctx.Err() == nil {
		changed := srv.PluginsChanged()
		if names, err := r.store(srv.Plugins()); err != nil {
			r.log.Warn("recording the registered plugins", "file", r.path, "error", err)
		} else {
			r.log.Debug("restart gate: recorded the registered plugins", "file", r.path, "plugins", names)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// awaitPlugins is the restart gate: it returns when every plugin of want
// is registered and ready again, when grace has passed, or when ctx ends,
// with the plugins still missing.
// waiting, when not nil, is told how many are still missing at each change
// and 0 at the end (nri_restart_gate_waiting_plugins).
func awaitPlugins(ctx context.Context, srv *server.Server, want []rosterEntry, grace time.Duration, waiting func(int)) []rosterEntry {
	if waiting == nil {
		waiting = func(int) {}
	}
	defer waiting(0)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for {
		changed := srv.PluginsChanged()
		ready := readyEntries(srv.Plugins())
		var missing []rosterEntry
		for _, e := range want {
			if !slices.ContainsFunc(ready, func(r rosterEntry) bool { return r.Plugin == e.Plugin }) {
				missing = append(missing, e)
			}
		}
		waiting(len(missing))
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return missing
		case <-timer.C:
			return missing
		case <-changed:
		}
	}
}

// awaitRestart is the restart gate: it waits until the plugins of wait are
// back or grace has passed; skip are the other plugins registered before
// the restart (planGate). Those of both that were required and are not
// back stay required until they are; it returns them (for the roster:
// roster.owe). The others are forgotten: the roster records only the
// plugins registered from now on.
func (d *daemon) awaitRestart(ctx context.Context, wait, skip []rosterEntry, grace time.Duration) (owed []rosterEntry) {
	if len(skip) > 0 {
		d.log.Info("restart gate: not waiting for these plugins: classic plugins that connected by themselves, required plugins an earlier gate went on without, or wait_on_restart = false",
			"plugins", rosterNames(skip))
	}
	var missing []rosterEntry
	if len(wait) > 0 {
		d.log.Info("restart gate: waiting for the plugins registered before the restart", "plugins", rosterNames(wait), "bound", grace)
		start := time.Now()
		var waiting func(int)
		if mx := d.n.Metrics(); mx != nil {
			waiting = mx.RestartGate
		}
		if missing = awaitPlugins(ctx, d.srv, wait, grace, waiting); len(missing) > 0 {
			d.log.Warn("restart gate: bound passed without these plugins; the ones that were required stay required until they are back",
				"missing", rosterNames(missing), "were_required", requiredNames(missing), "waited", time.Since(start).Round(time.Millisecond))
		} else {
			d.log.Info("restart gate: every plugin is back", "waited", time.Since(start).Round(time.Millisecond))
		}
	}
	ready := readyEntries(d.srv.Plugins())
	for _, e := range slices.Concat(missing, skip) {
		if e.Required && !slices.ContainsFunc(ready, func(r rosterEntry) bool { return r.Plugin == e.Plugin }) {
			owed = append(owed, e)
		}
	}
	d.srv.RequireUntilRegistered(rosterNames(owed))
	return owed
}

// requiredNames are the required plugins of entries.
func requiredNames(entries []rosterEntry) []string {
	var out []string
	for _, e := range entries {
		if e.Required {
			out = append(out, e.Plugin)
		}
	}
	return out
}
