package testutil

import (
	"testing"
	"time"
)

// The poll interval starts short, so a condition that holds a moment
// later is seen at once, and backs off, so a slow one does not spin.
const (
	pollMin = time.Millisecond
	pollMax = 20 * time.Millisecond
)

// Poll reports whether cond held within d, checking it at once and then
// at a backing-off interval (1 ms, doubling up to 20 ms).
func Poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for wait := pollMin; ; wait = min(2*wait, pollMax) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
	}
}

// WaitFor waits until cond holds (Poll), failing t naming what when it has
// not within d, and returns how long it took. d bounds a hang on a loaded
// machine: make it generous, the wait ends as soon as cond holds.
func WaitFor(t testing.TB, what string, d time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	if !Poll(d, cond) {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
	return time.Since(start)
}
