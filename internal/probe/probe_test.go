package probe

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func get(t *testing.T, h http.Handler, method, target string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	body, _ := io.ReadAll(w.Result().Body)
	return w.Code, strings.TrimSpace(string(body))
}

// TestReadinessAndLiveness: readiness succeeds only while SERVING, liveness
// whatever the status; services are asked with ?service=, unknown ones are
// 404; only GET and HEAD.
func TestReadinessAndLiveness(t *testing.T) {
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	hs.SetServingStatus("nri.v1beta1.AdminService", healthpb.HealthCheckResponse_SERVING)
	ready, live := Readiness(hs), Liveness(hs)

	for _, c := range []struct {
		h          http.Handler
		method     string
		target     string
		code       int
		body       string
		afterServe bool
	}{
		{ready, "GET", "/readyz", 503, "NOT_SERVING", false},
		{live, "GET", "/livez", 200, "NOT_SERVING", false},
		{ready, "GET", "/readyz?service=nri.v1beta1.AdminService", 200, "SERVING", false},
		{ready, "GET", "/readyz?service=nope", 404, "unknown service", false},
		{live, "GET", "/livez?service=nope", 404, "unknown service", false},
		{ready, "POST", "/readyz", 405, "method not allowed", false},
		{ready, "GET", "/readyz", 200, "SERVING", true},
		// (net/http drops the body of a HEAD answer; the recorder keeps it.)
		{ready, "HEAD", "/readyz", 200, "SERVING", true},
	} {
		if c.afterServe {
			hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		}
		code, body := get(t, c.h, c.method, c.target)
		if code != c.code || body != c.body {
			t.Errorf("%s %s: %d %q, want %d %q", c.method, c.target, code, body, c.code, c.body)
		}
	}
	// A stopping server (health.Server.Shutdown) is not ready, but alive.
	hs.Shutdown()
	if code, body := get(t, ready, "GET", "/readyz"); code != 503 || body != "NOT_SERVING" {
		t.Errorf("after Shutdown: %d %q", code, body)
	}
	if code, _ := get(t, live, "GET", "/livez"); code != 200 {
		t.Errorf("livez after Shutdown: %d", code)
	}
}
