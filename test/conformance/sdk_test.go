package conformance_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// sdkExecutors are the SDKs whose conformance executors TestSDKConformance
// runs, each with the environment variable holding its command line
// (fields separated by spaces; `make sdk-conformance` sets them all).
var sdkExecutors = []struct {
	lang, env string
	// skip names the scenarios that cannot pass through this SDK, each
	// with its reason.
	skip map[string]string
}{
	{"go", "NRI_CONFORMANCE_GO", nil},
	{"python", "NRI_CONFORMANCE_PYTHON", nil},
	{"typescript", "NRI_CONFORMANCE_TYPESCRIPT", nil},
	{"rust", "NRI_CONFORMANCE_RUST", nil},
}

// sdkSkips are the scenarios no SDK can pass through its public API, each
// with its reason.
var sdkSkips = map[string]string{
	"PluginConnection/should reject plugins with an invalid name": "" +
		"an SDK checks the plugin name itself and does not start with an invalid one: " +
		"the server's refusal (code, ErrorInfo reason) is never produced",
	"Gaps/registration refusals name the rule": "" +
		"an SDK checks name and index itself (a missing name defaults to the program's name), " +
		"and fails its own Configure for subscription bits it has no handler for: the server's refusals are not reached",
	"Gaps/a registration refused after the plugin was dialed sends Shutdown REGISTRATION_FAILED": "" +
		"its second plugin answers Configure with an out-of-range subscription, which an SDK refuses itself " +
		"(the registration fails with CONFIGURE_FAILED, not INVALID_EVENTS)",
	"Gaps/split synchronization: pages fit the plugin's message size and every reply but the last echoes more": "" +
		"an SDK collects the pages of a split Synchronize and calls its handler once with the full state: " +
		"the driver sees one Synchronize, not the pages",
	"Gaps/split synchronization: a plugin that does not echo more is refused": "" +
		"an SDK echoes more on every page but the last itself: a plugin cannot fail to",
}

// TestSDKConformance runs the scenario catalog through every SDK's
// conformance executor (docs/CONFORMANCE.md).
func TestSDKConformance(t *testing.T) {
	for _, x := range sdkExecutors {
		t.Run(x.lang, func(t *testing.T) {
			cmd := strings.Fields(os.Getenv(x.env))
			if len(cmd) == 0 {
				t.Skipf("%s is not set: `make sdk-conformance` builds the executors and sets it", x.env)
			}
			setup, err := conformance.ExecutorSetup(cmd)
			if err != nil {
				t.Fatal(err)
			}
			conformance.Run(t, setup, conformance.SkipScenarios(func(s conformance.ScenarioInfo) string {
				name := s.Group + "/" + s.Name
				if why := x.skip[name]; why != "" {
					return why
				}
				return sdkSkips[name]
			}))
		})
	}
}

// TestExecutorSetup checks the harness's own errors: bad configurations,
// and an executor that exits without registering.
func TestExecutorSetup(t *testing.T) {
	if _, err := conformance.ExecutorSetup(nil); err == nil {
		t.Error("ExecutorSetup accepted an empty command")
	}
	if _, err := conformance.ExecutorSetup([]string{"true"}, conformance.WithExecutorEnv("NOEQUALS")); err == nil {
		t.Error("ExecutorSetup accepted an environment entry without '='")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh:", err)
	}
	setup, err := conformance.ExecutorSetup([]string{sh, "-c", `echo "driver $NRI_CONFORMANCE_DRIVER"; exit 3`})
	if err != nil {
		t.Fatal(err)
	}
	env, err := setup(t, conformance.Options{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.TryStartPlugin(t, conformance.Spec("10", "quitter"))
	if err == nil || !strings.Contains(err.Error(), "exited before the server answered its registration") {
		t.Fatalf("an executor exiting at once: got %v, want an error saying it exited before registering", err)
	}
}
