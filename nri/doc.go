// Package nri holds the conventions of the nri-grpc protocol that its
// .proto files cannot express, for everybody who speaks it: the server,
// the plugin SDK, runtimes that drive AdaptationService, and plugins.
//
//   - Event masks: the subscription bits of ConfigureResponse.events and
//     Registered.events (EventMask, MaskEvents, AllEvents, ParseEventMask,
//     EventName).
//   - Call metadata keys (MetadataInstanceID, ...), as listed in
//     docs/PROTOCOL.md.
//   - Effective annotations: which of "key/container.NAME", "key/pod" and
//     "key" applies to a container (EffectiveAnnotation).
//   - Dispatch failures: the status of a failed creating event carries a
//     google.rpc.ErrorInfo (domain ErrorDomain) naming the DispatchOutcome
//     and the plugins involved. DispatchError builds it, OutcomeOf and
//     PluginsOf read it back, from an in-process error as well as from a
//     status received over gRPC.
//
// The package imports only the generated v1beta1 types, gRPC's status
// types and the standard library, so plugins can use it without pulling in
// the server.
package nri
