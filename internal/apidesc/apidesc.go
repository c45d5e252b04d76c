// Package apidesc serves the nri.v1beta1 API description: descriptors with
// their source comments (from the generated descriptor set), for gRPC server
// reflection, so `grpcurl describe` shows the documentation.
package apidesc

import (
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

var (
	filesOnce sync.Once
	files     *protoregistry.Files
	filesErr  error
)

// Files returns the nri.v1beta1 files and their imports, with comments.
func Files() (*protoregistry.Files, error) {
	filesOnce.Do(func() {
		var set descriptorpb.FileDescriptorSet
		if err := proto.Unmarshal(nriv1beta1.DescriptorSet, &set); err != nil {
			filesErr = fmt.Errorf("decode descriptor set: %w", err)
			return
		}
		files, filesErr = protodesc.NewFiles(&set)
	})
	return files, filesErr
}

// resolver looks descriptors up in the commented set first, then in the
// process registry (health, reflection and anything else registered).
type resolver struct{ first *protoregistry.Files }

func (r resolver) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	if fd, err := r.first.FindFileByPath(path); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(path)
}

func (r resolver) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d, err := r.first.FindDescriptorByName(name); err == nil {
		return d, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(name)
}

// RegisterReflection registers gRPC server reflection (v1 and v1alpha) on s,
// advertising the services services reports and describing nri.v1beta1 with
// its comments. Pass s itself as services to advertise what s serves.
func RegisterReflection(s *grpc.Server, services reflection.ServiceInfoProvider) error {
	f, err := Files()
	if err != nil {
		return err
	}
	opts := reflection.ServerOptions{Services: services, DescriptorResolver: resolver{f}}
	reflectionv1.RegisterServerReflectionServer(s, reflection.NewServerV1(opts))
	reflectionv1alpha.RegisterServerReflectionServer(s, reflection.NewServer(opts))
	return nil
}
