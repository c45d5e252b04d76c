// Package node is what one node's NRI server serves, built from one
// configuration (the TOML schema of package config, nrid.toml's): the
// server core (server.New with the configuration's options), its policy,
// the gRPC servers of the unix socket and of the optional TCP+TLS listener
// (the interceptor chain, the codec, flow-control windows, INVALID_ARGUMENT
// for requests that do not decode, reflection, peer credentials, gRPC
// health with a service per plugin), Prometheus metrics with the HTTP
// health probes, and tracing.
//
// nrid (cmd/nrid) and the drop-in for containerd's pkg/adaptation both
// serve through a Node, so that a plugin sees the same server from either.
// What only nrid does stays nrid's: the classic plugin socket and the
// bridge to a classic runtime (package bridge), the restart gate, the
// takeover and the roster of registered plugins.
//
// The life of a Node:
//
//	n, err := node.New(ctx, cfg)  // builds everything that can fail; nothing listens
//	l, err := n.Listen()          // the configured listeners (or ListenWith inherited ones)
//	go n.Serve(ctx, l)            // serves until ctx ends or a listener fails
//	n.SetServing(true)            // health: SERVING (it starts NOT_SERVING)
//	...
//	n.Stop(stopCtx)               // the graceful stop, bounded by stopCtx
//
// Beside the API the embedders agreed on, a Node has ListenWith (Listen that
// keeps the listeners a takeover handed over), Policy and Config (the
// compiled policy and the configuration, for the embedder's own
// decisions), and the options WithLogOutput, WithServiceName and
// WithStopHook (what runs in Stop between the server's Shutdown and the end
// of the gRPC servers: nrid stops its launched plugins there).
//
// An embedder that serves a bare server.Server on gRPC servers of its own
// uses the same wire setup as a Node's endpoints: GRPCServerOptions (the
// codec, the limits, the flow-control windows) and Services (the services,
// registered so that undecodable requests are INVALID_ARGUMENT, and
// reflection); transport.UnixCredentials and interceptor.ServerOptions
// add peer credentials and authentication. See docs/embedding.md.
package node
