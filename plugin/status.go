package plugin

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/metadata"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
)

// MaxStatusReasonLen bounds the reason of SetStatus and RequestResync
// (bytes of UTF-8), as the server does.
const MaxStatusReasonLen = 1024

// statusReport is the status the plugin last reported; version grows with
// every report.
type statusReport struct {
	status  nriv1beta1.PluginStatus
	reason  string
	version uint64
}

// WithStatus sets the status the plugin registers with (default READY). A
// plugin that needs time to warm up registers NOT_READY and reports READY
// with SetStatus when it is: what its events do meanwhile is the
// operator's NOT_READY policy (wait, fail or skip; docs/PROTOCOL.md).
func WithStatus(status nriv1beta1.PluginStatus, reason string) Option {
	return func(o *options) { o.status, o.statusReason, o.statusSet = status, reason, true }
}

// checkStatus checks a status and its reason as the server does.
func checkStatus(st nriv1beta1.PluginStatus, reason string) error {
	if st < nriv1beta1.PluginStatus_PLUGIN_STATUS_UNSPECIFIED || st > nriv1beta1.PluginStatus_PLUGIN_STATUS_DEGRADED {
		return fmt.Errorf("status %d is not a PluginStatus", st)
	}
	return checkReason(reason)
}

func checkReason(reason string) error {
	if len(reason) > MaxStatusReasonLen {
		return fmt.Errorf("reason of %d bytes, the maximum is %d", len(reason), MaxStatusReasonLen)
	}
	if !utf8.ValidString(reason) {
		return errors.New("reason is not valid UTF-8")
	}
	return nil
}

// SetStatus reports the plugin's status — READY, NOT_READY or DEGRADED —
// with a reason for operators (at most MaxStatusReasonLen bytes of UTF-8).
// The plugin keeps it across registrations: after nrid restarts, the
// plugin registers again with the status it last reported. While a
// registration is under way SetStatus records it and returns nil: it is
// sent as soon as the plugin is registered. While the plugin is not
// registered at all, SetStatus records it for the next registration and
// returns ErrNotRegistered, as the Python, TypeScript and Rust SDKs do.
// Reports are sent in the order of the
// calls. Without a deadline on ctx, a 10 s one is set.
func (p *Plugin) SetStatus(ctx context.Context, status nriv1beta1.PluginStatus, reason string) error {
	if err := checkStatus(status, reason); err != nil {
		return fmt.Errorf("plugin %s: SetStatus: %w", p.full, err)
	}
	p.statusMu.Lock()
	defer p.statusMu.Unlock()
	p.mu.Lock()
	p.status = statusReport{status: status, reason: reason, version: p.status.version + 1}
	s, inst, registering := p.current, p.instance, p.pending != nil
	p.mu.Unlock()
	if s == nil || inst == "" {
		if registering {
			// Sent once the registration completes (catchUpStatus).
			return nil
		}
		return fmt.Errorf("plugin %s: SetStatus: %w (the status is kept for the next registration)", p.full, ErrNotRegistered)
	}
	ctx, cancel := p.callContext(ctx, inst)
	defer cancel()
	if _, err := nriv1beta1.NewRuntimeServiceClient(s.cc).SetPluginStatus(ctx,
		&nriv1beta1.SetPluginStatusRequest{Status: status, Reason: reason}); err != nil {
		return fmt.Errorf("plugin %s: SetStatus: %w", p.full, err)
	}
	return nil
}

// Status returns the status the plugin last reported (or registers with).
func (p *Plugin) Status() (nriv1beta1.PluginStatus, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status.status, p.status.reason
}

// RequestResync asks the server for the runtime's state again ("my view
// changed") and returns the epoch of the Synchronize that will carry it:
// the plugin's Synchronize handler (or its Resync handler, when it has
// one) then gets a SynchronizeRequest of that epoch whose Reason is
// SYNC_REASON_PLUGIN_REQUESTED. Requests made while one is pending are
// merged into it (the same epoch is returned), and the server may defer a
// request to keep a minimum interval between them. Asking implies that the
// plugin handles repeated Synchronize calls, whether or not it declared
// WithResync. It returns ErrNotRegistered while the plugin is not
// registered. Without a deadline on ctx, a 10 s one is set.
func (p *Plugin) RequestResync(ctx context.Context, reason string) (uint64, error) {
	if err := checkReason(reason); err != nil {
		return 0, fmt.Errorf("plugin %s: RequestResync: %w", p.full, err)
	}
	p.mu.Lock()
	s, inst := p.current, p.instance
	p.mu.Unlock()
	if s == nil || inst == "" {
		return 0, fmt.Errorf("plugin %s: RequestResync: %w", p.full, ErrNotRegistered)
	}
	ctx, cancel := p.callContext(ctx, inst)
	defer cancel()
	rsp, err := nriv1beta1.NewRuntimeServiceClient(s.cc).RequestResync(ctx, &nriv1beta1.RequestResyncRequest{Reason: reason})
	if err != nil {
		return 0, fmt.Errorf("plugin %s: RequestResync: %w", p.full, err)
	}
	return rsp.GetEpoch(), nil
}

// callContext bounds a call to the server (when ctx has no deadline) and
// names the instance in its metadata.
func (p *Plugin) callContext(ctx context.Context, instance string) (context.Context, context.CancelFunc) {
	cancel := context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel = context.WithTimeout(ctx, p.opts.updateTimeout)
	}
	return metadata.AppendToOutgoingContext(ctx, nri.MetadataInstanceID, instance), cancel
}

// registrationStatusLocked puts the last reported status in a registration
// request and returns its version;
// p.mu is held.
func (p *Plugin) registrationStatusLocked(req *nriv1beta1.RegisterPluginRequest) uint64 {
	req.Status, req.StatusReason = p.status.status, p.status.reason
	return p.status.version
}

// catchUpStatus sends the status again when it changed after the
// registration request was built (SetStatus found no registration then).
func (p *Plugin) catchUpStatus(ctx context.Context, sent uint64) {
	p.mu.Lock()
	cur := p.status
	p.mu.Unlock()
	if cur.version == sent {
		return
	}
	if err := p.SetStatus(ctx, cur.status, cur.reason); err != nil {
		p.log.Warn("reporting the status after registration", "error", err)
	}
}
