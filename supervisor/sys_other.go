//go:build unix && !linux

package supervisor

import "syscall"

// sysProcAttr puts the process in its own process group. Only Linux has a
// parent-death signal.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited reports that it cannot wait for an exit without reaping here.
func waitExited(int) bool { return false }
