package adaptation

import (
	"sync"
	"time"

	"github.com/containerd/nri/pkg/api"
)

const (
	// DefaultPluginRegistrationTimeout is how long a plugin may take to
	// register by default.
	DefaultPluginRegistrationTimeout = api.DefaultPluginRegistrationTimeout
	// DefaultPluginRequestTimeout is how long a plugin may take to handle a
	// request by default.
	DefaultPluginRequestTimeout = api.DefaultPluginRequestTimeout
)

// The timeouts are process-wide settings in upstream's API, set before New;
// New copies them, so Adaptations created later are not affected by a later
// change and nothing reads these on the event path.
var (
	timeoutMu           sync.RWMutex
	registrationTimeout = DefaultPluginRegistrationTimeout
	requestTimeout      = DefaultPluginRequestTimeout
)

// SetPluginRegistrationTimeout sets how long a plugin may take to register
// (connect, register, be configured and synchronized) for the Adaptations
// New creates from now on.
func SetPluginRegistrationTimeout(t time.Duration) {
	timeoutMu.Lock()
	defer timeoutMu.Unlock()
	registrationTimeout = t
}

// SetPluginRequestTimeout sets how long each plugin may take to handle a
// request, for the Adaptations New creates from now on.
func SetPluginRequestTimeout(t time.Duration) {
	timeoutMu.Lock()
	defer timeoutMu.Unlock()
	requestTimeout = t
}

func getPluginRegistrationTimeout() time.Duration {
	timeoutMu.RLock()
	defer timeoutMu.RUnlock()
	return registrationTimeout
}

func getPluginRequestTimeout() time.Duration {
	timeoutMu.RLock()
	defer timeoutMu.RUnlock()
	return requestTimeout
}
