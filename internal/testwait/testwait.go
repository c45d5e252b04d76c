// Package testwait bounds what tests wait for by the test binary's own
// deadline instead of a fixed time.
//
// A test that waits for an event (a plugin registering, a stream ending)
// must not fail because a loaded machine made the event late: only a hang is
// a failure. A fixed bound (say 20 s) is both too long on a quiet machine
// and too short on a loaded one, where -race and two busy loops can make a
// step ten times slower. Bound gives every wait the time left before `go
// test -timeout` (10 minutes by default) less a margin, so that a wait that
// never ends still fails inside the test, naming what it waited for, before
// the binary's panic.
package testwait

import (
	"flag"
	"sync"
	"time"
)

// start is when the test binary started, near enough: package
// initialization runs before any test.
var start = time.Now()

// deadline is the binary's -test.timeout deadline, read once the testing
// flags are parsed (on the first call, inside a test).
var deadline = sync.OnceValue(func() time.Time {
	timeout := 10 * time.Minute
	if f := flag.Lookup("test.timeout"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok && d > 0 {
				timeout = d
			}
		}
	}
	return start.Add(timeout)
})

// Bound returns how long a test may wait for something it expects to
// happen: the time left before the test binary's deadline, less a margin of
// a tenth of the timeout (at most 30 s) to report the failure. It is never
// less than one second.
func Bound() time.Duration {
	d := deadline()
	margin := min(d.Sub(start)/10, 30*time.Second)
	return max(time.Until(d)-margin, time.Second)
}
