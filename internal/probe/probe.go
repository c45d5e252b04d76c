// Package probe answers HTTP health probes from a gRPC health server, for
// the probes that cannot reach nrid's unix socket (owner-only by default) or
// cannot speak gRPC: a kubelet httpGet probe, a load balancer, a monitoring
// agent running as another user.
//
//	GET /readyz   200 "SERVING" when the server ("") is SERVING, 503 with the
//	              status otherwise (NOT_SERVING, also while nrid stops)
//	GET /livez    200 with the status, whatever it is: nrid answers
//
// Both take ?service=NAME to ask about one gRPC service instead of the whole
// server; an unknown service is 404. The answers reveal the serving status
// and nothing else, as gRPC health does.
package probe

import (
	"context"
	"fmt"
	"net/http"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Checker is the status source: gRPC health's Check, which
// *google.golang.org/grpc/health.Server implements.
type Checker interface {
	Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error)
}

// Readiness returns the /readyz handler: 200 when SERVING, 503 otherwise.
func Readiness(c Checker) http.Handler { return handler{c: c, ready: true} }

// Liveness returns the /livez handler: 200 with any status.
func Liveness(c Checker) http.Handler { return handler{c: c} }

type handler struct {
	c     Checker
	ready bool // only SERVING is a success
}

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	rsp, err := h.c.Check(r.Context(), &healthpb.HealthCheckRequest{Service: r.URL.Query().Get("service")})
	if err != nil {
		code := http.StatusServiceUnavailable
		if status.Code(err) == codes.NotFound {
			code = http.StatusNotFound
		}
		http.Error(w, status.Convert(err).Message(), code)
		return
	}
	st := rsp.GetStatus()
	if h.ready && st != healthpb.HealthCheckResponse_SERVING {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = fmt.Fprintln(w, st)
}
