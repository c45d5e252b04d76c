package interceptor

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// callerLimiter is a token bucket per caller; it implements
// grpc-middleware's ratelimit.Limiter.
type callerLimiter struct {
	rate   float64
	burst  float64
	caller func(context.Context) string
	now    func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// maxBuckets bounds the limiter's memory: beyond it, full buckets (idle
// callers) are forgotten.
const maxBuckets = 4096

// newCallerLimiter returns nil for a rate of 0 (no limit).
func newCallerLimiter(rate float64, burst int, caller func(context.Context) string) *callerLimiter {
	if rate <= 0 {
		return nil
	}
	return &callerLimiter{rate: rate, burst: float64(max(burst, 1)), caller: caller, now: time.Now, buckets: map[string]*bucket{}}
}

// Limit implements ratelimit.Limiter.
func (l *callerLimiter) Limit(ctx context.Context) error {
	who := l.caller(ctx)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[who]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.prune(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[who] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		return fmt.Errorf("identity %q registers too often (at most %g per second, %g at once)", who, l.rate, l.burst)
	}
	b.tokens--
	return nil
}

func (l *callerLimiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}
