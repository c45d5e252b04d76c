// Package bench compares classic NRI (github.com/containerd/nri: upstream
// pkg/adaptation as the runtime, pkg/stub plugins over ttrpc) with nri-grpc
// (the embedded server, gRPC plugins) on identical work, in one run on one
// machine, and reports the ratios against the project's targets, how the
// cost grows with plugins and containers, and (Config.PlotDir) SVG plots of it.
//
// The rules that keep the comparison honest (see README.md):
//
//   - every plugin is a separate process, on both sides: the benchmark binary
//     re-executes itself in a plugin role (role.go);
//   - plugins fully decode what they receive (ttrpc and gRPC decode whole
//     messages) and touch it (SizeVT of every pod and container), and answer
//     CreateContainer with a small adjustment (an annotation and an env
//     variable of their own), so merging runs on both sides;
//   - the nri-grpc side is driven through the embedded Go API; the hop over
//     AdaptationService is measured and reported on its own rows;
//   - requests are built before a measured window, so their construction is
//     neither timed nor counted as CPU;
//   - CPU per call is the CPU of every process involved (the driver, which is
//     the runtime, and every plugin or nrid process) divided by the calls;
//   - the two sides alternate (classic, nri-grpc, classic, ...) run by run,
//     so machine noise spreads over both; results are medians of the runs.
//
// Entry points: Run (the nribench command, bench/cmd/nribench) and the go
// test benchmarks in bench_test.go. Both need RoleMain to be called first
// in main (or TestMain): it turns a re-executed process into its role.
package bench
