package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestDemo runs the demo as `go run ./cmd/nri-demo` does (it builds the
// example plugins and runs them as processes) and checks the key lines of
// its output.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example plugins")
	}
	var out bytes.Buffer
	if err := run(context.Background(), nil, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"plugins registered: 10-device-injector, 20-ulimit-adjuster, 90-validator",
		"CreateContainer   demo/web/app     ok",
		"10-device-injector  + mounts /var/www = type=bind source=/srv/www",
		"+ devices /dev/nri-demo0 = c 1:3 mode=0666",
		"20-ulimit-adjuster  + rlimits RLIMIT_NOFILE = hard=8192 soft=4096",
		"=> the runtime gets the merged adjustment: device /dev/nri-demo0, mount /srv/www -> /var/www, RLIMIT_NOFILE 4096/8192",
		"90-validator        accepted",
		"CreateContainer   demo/web/sidecar rejected",
		"90-validator        rejected",
		`validator "90-validator" rejected container adjustment, reason: mount of /etc/ssh at /keys by 10-device-injector`,
		"RemovePodSandbox  demo/web         ok",
		"every plugin got Shutdown(SERVER_STOPPING)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", got)
	}
}
