package pluginhost

import (
	"syscall"
	"time"
)

// rawSleep sleeps in the kernel without a runtime timer (see timekeeper).
func rawSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
