// Package interceptor holds the interceptor chain of nri-grpc's gRPC
// servers: nrid's, that of a program embedding the server package, and the
// one a Go plugin serves PluginService with (package plugin). ServerOptions
// builds it; the order of its pieces is fixed here, and only here.
// Outermost first:
//
//  0. Tracing is not an interceptor: an otelgrpc stats handler (a server
//     option added next to these) sees every call before any of them,
//     refused ones included.
//  1. recovery: a panic anywhere below, the chain's own pieces included,
//     becomes INTERNAL and one ERROR line "handler panicked" with the
//     method and the stack; the server keeps serving.
//  2. authentication (WithAuthenticator): attaches the caller's identity to
//     the call's context, or refuses the call with the Authenticator's
//     status (UNAUTHENTICATED, PERMISSION_DENIED) and one WARN line
//     "authentication refused" (method, peer, reason). Nothing below runs
//     for a refused call: it gets no "finished call" line.
//  3. call log: one line "finished call" per call, with the identity (it is
//     below authentication for that), method, code, error and duration:
//     DEBUG for successes, WARN for refusals (UNAUTHENTICATED,
//     PERMISSION_DENIED, RESOURCE_EXHAUSTED), ERROR for server faults
//     (INTERNAL, UNKNOWN, DATA_LOSS), INFO for the rest. WithoutCallLog
//     turns it off.
//  4. recovery again, for the handler and the pieces below: here the line
//     names the caller, and the call log above records the INTERNAL.
//  5. access (WithAccess): per-method authorization of the authenticated
//     caller; its error refuses the call.
//  6. rate limit (WithRegisterRate): RuntimeService.RegisterPlugin calls
//     per caller (a token bucket each), RESOURCE_EXHAUSTED beyond. It comes
//     after access, so that callers the access check refuses neither
//     consume nor hold a bucket.
//  7. WithUnary: the embedder's own interceptors, innermost, unary calls
//     only (nrid's server.Server.SimulationGuard).
//
// Calls to the services of WithPublic (gRPC health, typically) skip
// authentication, the call log and access: they are open to everybody and
// not logged. Recovery, the rate limit and WithUnary still apply.
//
// The identities themselves, and the Authenticator nrid uses, are in
// package auth.
package interceptor
