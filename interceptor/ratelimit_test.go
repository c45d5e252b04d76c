package interceptor

import (
	"context"
	"strings"
	"testing"
	"time"
)

type callerKey struct{}

func TestLimiter(t *testing.T) {
	caller := func(ctx context.Context) string { s, _ := ctx.Value(callerKey{}).(string); return s }
	l := newCallerLimiter(2, 3, caller)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	a := context.WithValue(context.Background(), callerKey{}, "uid:1")
	b := context.WithValue(context.Background(), callerKey{}, "uid:2")
	for i := range 3 {
		if err := l.Limit(a); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if err := l.Limit(a); err == nil || !strings.Contains(err.Error(), `"uid:1"`) {
		t.Fatalf("the 4th call in a burst of 3: %v", err)
	}
	if err := l.Limit(b); err != nil {
		t.Fatalf("another caller: %v", err)
	}
	now = now.Add(500 * time.Millisecond) // one token at 2/s
	if err := l.Limit(a); err != nil {
		t.Fatalf("after refill: %v", err)
	}
	if err := l.Limit(a); err == nil {
		t.Fatal("only one token was refilled")
	}
	if newCallerLimiter(0, 10, caller) != nil {
		t.Fatal("rate 0 must disable the limiter")
	}
}
