//go:build !wasip1

package bundle

import (
	"syscall"
	"time"
)

// processCPU is the process's user and system CPU time so far: on a loaded
// machine the CPU a call costs, where its wall time (ns/op) is mostly
// waiting for a core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
