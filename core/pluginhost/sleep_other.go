//go:build !linux

package pluginhost

import "time"

// rawSleep falls back to a runtime timer off Linux: strict deadlines may
// then fire late while every P is busy (see timekeeper).
func rawSleep(d time.Duration) { time.Sleep(d) }
