package bridge

// WithoutValidationSubscription keeps the bridge off the runtime's
// validation whatever the runtime's release: for measuring what the
// subscription costs (TestValidationSubscriptionCost) only. Rejections
// are then CreateContainer errors.
func WithoutValidationSubscription() RuntimeOption {
	return func(o *runtimeOptions) { o.noValidation = true }
}
