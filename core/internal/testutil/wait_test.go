package testutil

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	var n atomic.Int32
	if !Poll(5*time.Second, func() bool { return n.Add(1) == 3 }) || n.Load() != 3 {
		t.Fatalf("Poll returned before the condition held (%d checks)", n.Load())
	}
	start := time.Now()
	if Poll(30*time.Millisecond, func() bool { return false }) {
		t.Fatal("Poll of a false condition held")
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("Poll gave up after %v, before its 30ms", d)
	}
}

// WaitFor fails the test when the condition does not hold in time.
func TestWaitFor_Fails(t *testing.T) {
	ft := &fatalT{TB: t}
	func() {
		defer func() { _ = recover() }()
		WaitFor(ft, "never", 10*time.Millisecond, func() bool { return false })
	}()
	if !ft.failed {
		t.Error("WaitFor on a false condition did not fail the test")
	}
	if d := WaitFor(t, "at once", time.Second, func() bool { return true }); d > time.Second {
		t.Errorf("took %v", d)
	}
}

type fatalT struct {
	testing.TB
	failed bool
}

func (f *fatalT) Fatalf(string, ...any) { f.failed = true; panic("fatal") }
