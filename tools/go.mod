// Pinned Go tools for nri-grpc, kept out of the main module's dependency graph.
// Built into .tmp/bin by the Makefile (`make tools`, `make grpcurl`) with
// `go -C tools build`; buf itself comes from npm (tools/package.json).
//
// Updating: `go -C tools get -tool <pkg>@<version>`, then `go -C tools mod tidy`.
// Pins: protoc-gen-go v1.36.12, protoc-gen-go-grpc v1.6.2, grpcurl v1.9.4.
// vtprotobuf is the v0.6.1-0.20240319094008-0393e58bdf10 pseudo-version, not
// v0.6.0: grpc >= v1.83 requires it, so MVS raises v0.6.0 to it anyway, and the
// main module resolves the same version (generator and runtime must match).
// grpc is aligned with the main module (v1.85.0) to share the module cache.
module github.com/nri-grpc/nri-grpc/tools

go 1.26.8

tool (
	github.com/fullstorydev/grpcurl/cmd/grpcurl
	github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto
	google.golang.org/grpc/cmd/protoc-gen-go-grpc
	google.golang.org/protobuf/cmd/protoc-gen-go
)

require (
	cel.dev/expr v0.25.3 // indirect
	cloud.google.com/go/compute/metadata v0.9.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/cncf/xds/go v0.0.0-20260202195803-dba9d589def2 // indirect
	github.com/envoyproxy/go-control-plane/envoy v1.39.1-0.20260819172001-e6e3fd93e4be // indirect
	github.com/envoyproxy/protoc-gen-validate v1.3.3 // indirect
	github.com/fullstorydev/grpcurl v1.9.4 // indirect
	github.com/go-jose/go-jose/v4 v4.1.4 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/jhump/protoreflect v1.18.1 // indirect
	github.com/jhump/protoreflect/v2 v2.0.0-beta.1 // indirect
	github.com/petermattis/goid v0.0.0-20260113132338-7c7de50cc741 // indirect
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	github.com/spiffe/go-spiffe/v2 v2.8.1 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260825221802-da73d73af1c5 // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/grpc/cmd/protoc-gen-go-grpc v1.6.2 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
