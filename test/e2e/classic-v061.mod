// test/classic-old built against NRI v0.6.1 (go build -modfile, test/e2e/harness_test.go).
module github.com/nri-grpc/nri-grpc/test/classic-old

go 1.26.8

require github.com/containerd/nri v0.6.1

require (
	github.com/containerd/ttrpc v1.2.3 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/protobuf v1.5.3 // indirect
	github.com/opencontainers/runtime-spec v1.0.3-0.20220825212826-86290f6a00fb // indirect
	github.com/sirupsen/logrus v1.8.1 // indirect
	golang.org/x/net v0.17.0 // indirect
	golang.org/x/sys v0.13.0 // indirect
	golang.org/x/text v0.13.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20230731190214-cbb8c96f2d6d // indirect
	google.golang.org/grpc v1.57.1 // indirect
	google.golang.org/protobuf v1.31.0 // indirect
	k8s.io/cri-api v0.25.3 // indirect
)
