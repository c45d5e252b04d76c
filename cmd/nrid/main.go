// Command nrid is the nri-grpc daemon: the NRI server over gRPC.
//
// At this stage nrid serves gRPC health and server reflection (listing and
// describing every nri.v1beta1 service) on its local unix socket; the NRI
// services themselves answer UNIMPLEMENTED until the server core lands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/reflect/protoreflect"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/apidesc"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/version"
)

// DefaultSocket is where nrid listens unless told otherwise.
const DefaultSocket = "/var/run/nri/nri-grpc.sock"

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "nrid:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("nrid", flag.ContinueOnError)
	socket := fs.String("socket", DefaultSocket, "unix socket to serve on")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Println("nrid", version.NRI())
		return nil
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	lis, err := sockets.Listen(*socket, sockets.DefaultListenOptions)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(codec.ServerOption())
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	if err := apidesc.RegisterReflection(srv, withAPI{srv}); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		hs.Shutdown()
		srv.GracefulStop()
	}()
	log.Info("serving", "socket", *socket, "version", version.NRI())
	if err := srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// withAPI advertises the nri.v1beta1 services through reflection next to
// the services the server really registered.
type withAPI struct{ srv *grpc.Server }

// GetServiceInfo implements reflection.ServiceInfoProvider.
func (w withAPI) GetServiceInfo() map[string]grpc.ServiceInfo {
	out := w.srv.GetServiceInfo()
	for _, fd := range []protoreflect.FileDescriptor{
		nriv1beta1.File_nri_v1beta1_runtime_service_proto,
		nriv1beta1.File_nri_v1beta1_adaptation_service_proto,
		nriv1beta1.File_nri_v1beta1_admin_service_proto,
		nriv1beta1.File_nri_v1beta1_plugin_service_proto,
	} {
		svcs := fd.Services()
		for i := 0; i < svcs.Len(); i++ {
			sd := svcs.Get(i)
			if _, ok := out[string(sd.FullName())]; !ok {
				out[string(sd.FullName())] = grpc.ServiceInfo{Metadata: fd.Path()}
			}
		}
	}
	return out
}
