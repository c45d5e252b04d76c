// Package conformance is the conformance suite of nri-grpc: the scenarios
// every way of running NRI through nri-grpc must pass, written once and run
// against several paths.
//
// A path is described by a [Setup]: it builds an [Env] through which a
// scenario drives the runtime's lifecycle events into NRI ([Env.Runtime]),
// sets the runtime's state ([Env.SetState]) and starts plugins described by
// a [PluginSpec] ([Env.StartPlugin]). Every call a plugin receives is
// recorded, in order, in the env's [CallLog] as "NN-name:Method", so
// scenarios assert the exact order of calls across plugins.
//
//	func TestDirect(t *testing.T) { conformance.Run(t, directSetup) }
//
// Scenarios and setups see the test as a [T], which *testing.T satisfies;
// [Execute] runs the same scenarios without the testing package (bounded
// parallelism, a bound per scenario) and returns a [Report]: cmd/nritest
// is built on it.
//
// [Run] runs every scenario as a subtest: the scenarios of classic NRI's own
// test suite (github.com/containerd/nri pkg/adaptation, mirrored with strict
// order assertions where classic only compared sets), the gaps a conformance
// suite should cover on top of them, and one scenario for each deliberate
// change of nri-grpc from classic NRI (DESIGN §5), named after the change
// and asserting nri-grpc's behaviour. [Scenarios] lists them.
//
// A path that cannot have a feature some scenarios need (the classic ttrpc
// paths: classic plugins have no capabilities or instance ids) skips them
// by name, each with its reason ([SkipScenarios]); an env whose errors are
// partly classic NRI's plain text declares which ([PlainErrors]).
//
// Scenarios never assert on elapsed time: they wait for events with
// generous bounds, and a plugin that must time out blocks until its call's
// context ends.
package conformance
