package faults_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// nridBin is the nrid binary every test runs: NRID_BIN, or one TestMain
// builds from this checkout.
var nridBin string

func TestMain(m *testing.M) { os.Exit(mainE(m)) }

// mainE builds nrid unless NRID_BIN names one, runs the tests and removes
// what it built.
func mainE(m *testing.M) int {
	if bin := os.Getenv("NRID_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			fmt.Fprintln(os.Stderr, "faults: NRID_BIN:", err)
			return 1
		}
		nridBin = abs
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "nf-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	nridBin = filepath.Join(dir, "nrid")
	// By import path: go test runs in the package directory.
	cmd := exec.Command("go", "build", "-o", nridBin, "github.com/nri-grpc/nri-grpc/cmd/nrid")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "faults: building nrid: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}
