package node

import (
	"context"

	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/server"
)

// Launch starts the gRPC plugins of the configuration's launch.plugin_dir
// under l, registering over the node's unix socket; nothing without a
// plugin directory. A plugin that cannot be launched is logged, and the
// others start.
func (n *Node) Launch(ctx context.Context, l server.Launcher) {
	c := n.cfg.Launch
	if c.PluginDir == "" {
		return
	}
	if err := n.srv.Launch(ctx, l, server.LaunchConfig{
		PluginDir: c.PluginDir, ConfigDir: c.ConfigDir, ServerAddress: sockets.Target(n.cfg.Server.Socket),
	}); err != nil {
		n.log.Warn("launching plugins", "dir", c.PluginDir, "error", err)
	}
}

// RememberSelectors tells the server the selectors of the configuration's
// [[plugin]] entries (server.RememberSelectors): while such a plugin is
// absent, what it is required for is what it would select. An embedder
// with selectors of its own to remember (nrid's restart gate) calls it
// after those, so that the configuration's win.
func (n *Node) RememberSelectors() {
	for full, sels := range n.policy.Selectors() {
		if err := n.srv.RememberSelectors(full, sels); err != nil {
			n.log.Warn("ignoring the configured selectors of a plugin", "plugin", full, "error", err)
		}
	}
}
