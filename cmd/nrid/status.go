package main

import (
	"context"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nri-grpc/nri-grpc/cmd/nrid/internal/policy"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// PluginHealthPrefix prefixes the gRPC health service name of each plugin:
// "nri.plugin/10-name" is SERVING while the plugin is registered and
// READY or DEGRADED, NOT_SERVING while it is NOT_READY, and
// SERVICE_UNKNOWN once it is gone. A plugin's status never changes nrid's
// own health ("" and the services nrid serves).
const PluginHealthPrefix = "nri.plugin/"

// maxPluginHealth bounds the plugin names published in the health service
// (its entries are never removed, only set to SERVICE_UNKNOWN): names
// beyond it are not published.
const maxPluginHealth = 256

// notReady is the server's default NOT_READY policy for server.not_ready,
// which the configuration's check has validated.
func notReady(v string) nriv1beta1.NotReadyPolicy {
	p, _ := policy.ParseNotReady(v)
	return p
}

// watchPluginHealth keeps the per-plugin health services in step with the
// plugins' statuses until ctx ends.
func (d *daemon) watchPluginHealth(ctx context.Context) {
	published := map[string]healthpb.HealthCheckResponse_ServingStatus{}
	for {
		changed := d.srv.StatusChanged()
		d.publishPluginHealth(published)
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// publishPluginHealth sets each plugin's health service from its status;
// published holds what was set before.
func (d *daemon) publishPluginHealth(published map[string]healthpb.HealthCheckResponse_ServingStatus) {
	now := map[string]healthpb.HealthCheckResponse_ServingStatus{}
	for _, pi := range d.srv.Plugins() {
		if pi.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_CLOSING {
			continue
		}
		name := PluginHealthPrefix + pi.GetPlugin().GetIndex() + "-" + pi.GetPlugin().GetName()
		st := healthpb.HealthCheckResponse_SERVING
		if pi.GetStatus() == nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		// Of a current and a pending instance, the last listed (the
		// pending one, taking over) wins unless it is still configuring.
		if _, seen := now[name]; !seen || pi.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY {
			now[name] = st
		}
	}
	for name, st := range now {
		if old, ok := published[name]; ok && old == st {
			continue
		}
		if _, ok := published[name]; !ok && len(published) >= maxPluginHealth {
			continue
		}
		published[name] = st
		d.health.SetServingStatus(name, st)
	}
	for name, old := range published {
		if _, ok := now[name]; !ok && old != healthpb.HealthCheckResponse_SERVICE_UNKNOWN {
			published[name] = healthpb.HealthCheckResponse_SERVICE_UNKNOWN
			d.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVICE_UNKNOWN)
		}
	}
}
