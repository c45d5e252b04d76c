package main

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
)

// TestMalformedRequestsAreInvalidArgument: a request nrid cannot decode is
// the caller's fault. RegisterPlugin (a stream) and ListPlugins (unary)
// answer INVALID_ARGUMENT with a short message, even for 1 MiB of garbage,
// and nrid logs the refused registration at INFO, not as a server error.
func TestMalformedRequestsAreInvalidArgument(t *testing.T) {
	n := startNrid(t, "")
	cc := n.conn(t)
	garbage := &codec.Raw{Data: bytes.Repeat([]byte{0xff}, 1<<20)}
	check := func(err error, method string) {
		t.Helper()
		st := status.Convert(err)
		must(t, st.Code() == codes.InvalidArgument && strings.HasPrefix(st.Message(), "malformed "+method+" request: "),
			"%s: %v, want INVALID_ARGUMENT malformed request", method, err)
		must(t, len(st.Message()) < 300, "%s: a message of %d bytes", method, len(st.Message()))
	}

	method := nriv1beta1.RuntimeService_RegisterPlugin_FullMethodName
	stream, err := cc.NewStream(testCtx(t), &grpc.StreamDesc{ServerStreams: true}, method)
	must(t, err == nil, "NewStream: %v", err)
	must(t, stream.SendMsg(garbage) == nil, "SendMsg")
	must(t, stream.CloseSend() == nil, "CloseSend")
	check(stream.RecvMsg(&nriv1beta1.RegisterPluginResponse{}), method)
	line := n.logs.wait(t, reLog(`[^\n]*finished call[^\n]*RegisterPlugin[^\n]*`), n.done)[0]
	must(t, strings.Contains(line, "level=INFO") && strings.Contains(line, "InvalidArgument"), "logged %s", line)

	method = nriv1beta1.AdminService_ListPlugins_FullMethodName
	check(cc.Invoke(testCtx(t), method, garbage, &nriv1beta1.ListPluginsResponse{}), method)
}
