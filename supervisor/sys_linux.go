package supervisor

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the process in its own process group and has the kernel
// send it SIGKILL when the daemon dies.
//
// Pdeathsig fires when the thread that forked the process ends, not the
// daemon. The Go runtime ends threads only for goroutines that exit while
// locked to their thread; the supervising goroutines never lock theirs.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitExited blocks until the child pid has exited, without reaping it, and
// reports whether it could wait so.
func waitExited(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			return true
		}
		if err != unix.EINTR {
			return false
		}
	}
}
