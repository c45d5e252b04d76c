package grpcreg_test

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/grpcreg"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
)

// admin answers ListPlugins with one plugin and GetState with one page
// holding a pod named after the request's pod id.
type admin struct {
	nriv1beta1.UnimplementedAdminServiceServer
}

func (admin) ListPlugins(context.Context, *nriv1beta1.ListPluginsRequest) (*nriv1beta1.ListPluginsResponse, error) {
	return &nriv1beta1.ListPluginsResponse{Plugins: []*nriv1beta1.PluginInfo{{InstanceId: "i-1"}}}, nil
}

func (admin) GetState(req *nriv1beta1.GetStateRequest, s grpc.ServerStreamingServer[nriv1beta1.GetStateResponse]) error {
	return s.Send(&nriv1beta1.GetStateResponse{Pods: []*nriv1beta1.PodSandbox{{Id: req.GetPodId()}}})
}

// adaptation answers every Attach message with an empty response until the
// stream fails.
type adaptation struct {
	nriv1beta1.UnimplementedAdaptationServiceServer
}

func (adaptation) Attach(s grpc.BidiStreamingServer[nriv1beta1.AttachRequest, nriv1beta1.AttachResponse]) error {
	for {
		if _, err := s.Recv(); err != nil {
			return err
		}
		if err := s.Send(&nriv1beta1.AttachResponse{}); err != nil {
			return err
		}
	}
}

// serve starts a gRPC server with opts on a unix socket, with the admin and
// adaptation services registered through grpcreg, and returns a client
// connection to it.
func serve(t *testing.T, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "grpc.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(opts...)
	nriv1beta1.RegisterAdminServiceServer(grpcreg.Registrar(g), admin{})
	grpcreg.Register(g, &nriv1beta1.AdaptationService_ServiceDesc, adaptation{})
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	t.Cleanup(cancel)
	return ctx
}

// invoke calls a unary method with data as the request's encoding.
func invoke(ctx context.Context, cc *grpc.ClientConn, method string, data []byte) error {
	var out nriv1beta1.ListPluginsResponse
	return cc.Invoke(ctx, method, &codec.Raw{Data: data}, &out, codec.CallOption())
}

// serverStream calls a server-streaming method with data as the request's
// encoding and returns the error of the first receive.
func serverStream(ctx context.Context, cc *grpc.ClientConn, method string, data []byte) error {
	cs, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, method, codec.CallOption())
	if err != nil {
		return err
	}
	if err := cs.SendMsg(&codec.Raw{Data: data}); err != nil {
		return err
	}
	if err := cs.CloseSend(); err != nil {
		return err
	}
	var out nriv1beta1.GetStateResponse
	return cs.RecvMsg(&out)
}

// garbage is input that does not decode as any message.
func garbage() map[string][]byte {
	return map[string][]byte{
		"two 0xff":           {0xff, 0xff},
		"1 MiB of 0xff":      bytes.Repeat([]byte{0xff}, 1<<20),
		"a field cut short":  {0x0a, 0x64, 'p', 'o', 'd'},
		"a 1 MiB field cut":  append(protowire.AppendVarint([]byte{0x0a}, 2<<20), bytes.Repeat([]byte{'x'}, 1<<20)...),
		"wire type 7":        {0x0f, 1, 2, 3, 4},
		"an illegal field 0": {0x00, 0x01},
	}
}

// wantInvalid fails unless err is INVALID_ARGUMENT for method, with a short
// message.
func wantInvalid(t *testing.T, err error, method string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), "malformed "+method+" request: ") {
		t.Fatalf("error %v, want INVALID_ARGUMENT malformed %s request", err, method)
	}
	if n := len(st.Message()); n >= 300 {
		t.Fatalf("the message has %d bytes: %.300q", n, st.Message())
	}
}

// TestMalformedRequestsAreInvalidArgument: a request that does not decode
// is answered INVALID_ARGUMENT with a short message naming the method, on
// a unary and on a server-streaming method, however long the input.
func TestMalformedRequestsAreInvalidArgument(t *testing.T) {
	cc := serve(t, codec.ServerOption())
	for name, data := range garbage() {
		t.Run(name, func(t *testing.T) {
			err := invoke(callCtx(t), cc, nriv1beta1.AdminService_ListPlugins_FullMethodName, data)
			wantInvalid(t, err, nriv1beta1.AdminService_ListPlugins_FullMethodName)
			err = serverStream(callCtx(t), cc, nriv1beta1.AdminService_GetState_FullMethodName, data)
			wantInvalid(t, err, nriv1beta1.AdminService_GetState_FullMethodName)
		})
	}
}

// TestMalformedMessageMidStream: on a bidirectional stream, a message that
// does not decode after good ones ends the stream INVALID_ARGUMENT.
func TestMalformedMessageMidStream(t *testing.T) {
	cc := serve(t, codec.ServerOption())
	method := nriv1beta1.AdaptationService_Attach_FullMethodName
	cs, err := cc.NewStream(callCtx(t), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, codec.CallOption())
	if err != nil {
		t.Fatal(err)
	}
	hello := &nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Hello{Hello: &nriv1beta1.AttachHello{RuntimeName: "rt"}}}
	if err := cs.SendMsg(hello); err != nil {
		t.Fatal(err)
	}
	var out nriv1beta1.AttachResponse
	if err := cs.RecvMsg(&out); err != nil {
		t.Fatalf("answer to a good message: %v", err)
	}
	if err := cs.SendMsg(&codec.Raw{Data: bytes.Repeat([]byte{0xff}, 1<<20)}); err != nil {
		t.Fatal(err)
	}
	wantInvalid(t, cs.RecvMsg(&out), method)
}

// TestGoodRequestsAreServed: requests that decode reach the handlers whole,
// through the capture.
func TestGoodRequestsAreServed(t *testing.T) {
	for name, opts := range map[string][]grpc.ServerOption{
		"nri-grpc codec":     {codec.ServerOption()},
		"grpc's proto codec": nil,
	} {
		t.Run(name, func(t *testing.T) {
			cc := serve(t, opts...)
			a := nriv1beta1.NewAdminServiceClient(cc)
			rsp, err := a.ListPlugins(callCtx(t), &nriv1beta1.ListPluginsRequest{})
			if err != nil || len(rsp.GetPlugins()) != 1 {
				t.Fatalf("ListPlugins: %v, %v", rsp, err)
			}
			st, err := a.GetState(callCtx(t), &nriv1beta1.GetStateRequest{PodId: "pod-1"})
			if err != nil {
				t.Fatal(err)
			}
			page, err := st.Recv()
			if err != nil || len(page.GetPods()) != 1 || page.GetPods()[0].GetId() != "pod-1" {
				t.Fatalf("GetState: %v, %v", page, err)
			}
		})
	}
}

// TestOtherFailuresAreLeftAlone: what is not a decoding failure keeps
// grpc-go's answer: a message over the size limit is RESOURCE_EXHAUSTED;
// and on a server with another codec, decoding failures stay INTERNAL.
func TestOtherFailuresAreLeftAlone(t *testing.T) {
	t.Run("size limit", func(t *testing.T) {
		cc := serve(t, codec.ServerOption(), grpc.MaxRecvMsgSize(1024))
		data := bytes.Repeat([]byte{0xff}, 4096)
		if err := invoke(callCtx(t), cc, nriv1beta1.AdminService_ListPlugins_FullMethodName, data); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("unary: %v, want RESOURCE_EXHAUSTED", err)
		}
		if err := serverStream(callCtx(t), cc, nriv1beta1.AdminService_GetState_FullMethodName, data); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("stream: %v, want RESOURCE_EXHAUSTED", err)
		}
	})
	t.Run("another codec", func(t *testing.T) {
		cc := serve(t)
		if err := invoke(callCtx(t), cc, nriv1beta1.AdminService_ListPlugins_FullMethodName, []byte{0xff, 0xff}); status.Code(err) != codes.Internal {
			t.Fatalf("unary: %v, want INTERNAL", err)
		}
	})
}
