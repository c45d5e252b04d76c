package bench

// dropinStandIn is true while github.com/nri-grpc/nri-grpc/adaptation is not
// wired in: the "drop-in" side of the dropin scenario is then upstream
// pkg/adaptation too (the same code on both sides of the interface), its
// gRPC-plugin rows are skipped, and the report and summary say so.
//
// TODO(issue 29 item 5): once the drop-in lands, set this to false and
// return dropin.New(...) below (the same arguments as newUpstreamNRI, plus
// dropin.WithConfigFile(p.config)).
const dropinStandIn = true

// newDropinNRI is the drop-in, created as containerd creates pkg/adaptation.
func newDropinNRI(p adaptationPaths) (runtimeNRI, error) {
	return newUpstreamNRI(p)
}
