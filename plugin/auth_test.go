package plugin_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/plugin/plugintest"
)

// Environment switches of the test binary re-executed as another user.
const (
	envDial     = "NRI_SDK_TEST_DIAL"
	envInstance = "NRI_SDK_TEST_INSTANCE"
)

func TestMain(m *testing.M) {
	if sock := os.Getenv(envDial); sock != "" {
		os.Exit(dialAsChild(sock, os.Getenv(envInstance)))
	}
	os.Exit(m.Run())
}

// dialAsChild calls StopPodSandbox on the plugin at sock and prints the
// status code it got.
func dialAsChild(sock, instance string) int {
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), plugintest.Wait)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, nri.MetadataInstanceID, instance)
	_, err = nriv1beta1.NewPluginServiceClient(cc).StopPodSandbox(ctx, &nriv1beta1.StopPodSandboxRequest{Pod: plugintest.Pod(0)})
	fmt.Printf("uid=%d code=%s message=%s\n", os.Getuid(), status.Code(err), status.Convert(err).Message())
	return 0
}

// callAsNobody re-executes the test binary as uid 65534 to call the plugin
// p, and returns what the child printed.
func callAsNobody(t *testing.T, bin string, p *plugintest.Instance) string {
	t.Helper()
	sock := strings.TrimPrefix(p.Endpoint(), "unix://")
	// Let the other user reach the socket: only the peer credential check
	// stands in the way.
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), envDial+"="+sock, envInstance+"="+p.Registered().GetInstanceId())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as uid 65534: %v\n%s", err, out)
	}
	return string(out)
}

// copyTestBinary copies the running test binary where uid 65534 can execute
// it.
func copyTestBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "nri-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "plugin.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestUnauthenticatedCallerRefused: a process of another uid than the
// server's (and not root) that connects to the plugin's socket is refused,
// even with the right instance id; WithDebugAccess lets it through.
func TestUnauthenticatedCallerRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to run a child process as uid 65534")
	}
	env := plugintest.New(t)
	if err := os.Chmod(env.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := copyTestBinary(t)

	strict := newCalls()
	p := env.Start(t, &recorder{c: strict}, plugin.WithName("strict"))
	out := callAsNobody(t, bin, p)
	if !strings.Contains(out, "uid=65534 code=PermissionDenied") || !strings.Contains(out, "may not call plugin 10-strict") {
		t.Errorf("a stranger's call: %s; want PermissionDenied", out)
	}
	if len(strict.names()) != 1 { // Synchronize only
		t.Errorf("the refused call reached the plugin: %v", strict.names())
	}

	open := newCalls()
	p = env.Start(t, &recorder{c: open}, plugin.WithName("open"), plugin.WithDebugAccess())
	out = callAsNobody(t, bin, p)
	if !strings.Contains(out, "uid=65534 code=OK") {
		t.Errorf("a stranger's call with WithDebugAccess: %s; want OK", out)
	}
	open.wait(t, "StopPodSandbox", 1)
}
