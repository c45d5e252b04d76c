package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
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
}

// roster keeps the list of registered plugins in server.state_dir, so
// that a restarted nrid knows whom to wait for (the restart gate): written
// whenever a plugin registers or unregisters, never while nrid stops (its
// own stop unregisters everybody; the list must be the one from before).
type roster struct {
	path string
	log  *slog.Logger
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
	defer f.Close()
	var out struct {
		Plugins []rosterEntry `json:"plugins"`
	}
	dec := json.NewDecoder(&limitedReader{f, maxRoster})
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("%s: %w", r.path, err)
	}
	return out.Plugins, nil
}

// limitedReader fails a read past n bytes instead of pretending EOF.
type limitedReader struct {
	f *os.File
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("larger than 1 MiB")
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}

// store writes the registered plugins atomically (a temporary file renamed
// over the old one).
func (r *roster) store(plugins []*nriv1beta1.PluginInfo) ([]string, error) {
	var out struct {
		Plugins []rosterEntry `json:"plugins"`
	}
	out.Plugins = []rosterEntry{}
	for _, p := range plugins {
		if p.GetState() != nriv1beta1.PluginState_PLUGIN_STATE_READY {
			continue
		}
		e := rosterEntry{Plugin: p.GetPlugin().GetIndex() + "-" + p.GetPlugin().GetName(), Required: p.GetFailurePolicy().GetFailRequest()}
		if !slices.Contains(out.Plugins, e) {
			out.Plugins = append(out.Plugins, e)
		}
	}
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
func awaitPlugins(ctx context.Context, srv *server.Server, want []rosterEntry, grace time.Duration) []rosterEntry {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for {
		changed := srv.PluginsChanged()
		ready := map[string]bool{}
		for _, p := range srv.Plugins() {
			if p.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY {
				ready[p.GetPlugin().GetIndex()+"-"+p.GetPlugin().GetName()] = true
			}
		}
		var missing []rosterEntry
		for _, e := range want {
			if !ready[e.Plugin] {
				missing = append(missing, e)
			}
		}
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
