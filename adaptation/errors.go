package adaptation

import (
	"errors"
	"strings"

	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
)

// asUpstream returns the server's error for a creating event in the shape
// upstream's pkg/adaptation returns it, which runtimes pass on to their
// clients (containerd's CRI keeps a status's code and nests its text):
//
//   - a plugin's veto: the plugin's own error, its code and message, as
//     upstream returns what the plugin answered;
//   - a validator's rejection: a plain error with upstream's text
//     (`validator "NN-name" rejected container adjustment, reason: …`);
//   - a conflict between plugins: a plain error with upstream's text
//     (`plugins "A" and "B" both tried to set …`).
//
// Everything else (a required plugin unavailable, a timeout, a bad
// request) is nri-grpc's own decision and keeps its status, which carries
// the outcome and the plugins (nri.OutcomeOf, nri.PluginsOf).
func asUpstream(event string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := st.Message()
	switch nri.OutcomeOf(err) {
	case nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_VETOED:
		if ps := nri.PluginsOf(err); len(ps) == 1 {
			if own, ok := strings.CutPrefix(msg, "plugin "+ps[0]+" vetoed "+event+": "); ok {
				return status.Error(st.Code(), own)
			}
		}
	case nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REJECTED:
		return errors.New(msg)
	case nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_CONFLICT:
		return errors.New(strings.TrimPrefix(msg, event+": "))
	}
	return err
}
