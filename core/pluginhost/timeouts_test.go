package pluginhost

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

func TestTimekeeper_Watchdog(t *testing.T) {
	pc := plugin("bad", "bad", "translator", ModeTrusted)
	pc.Limits.CallTimeoutMS = 5
	h := newTestHost(t, pc)
	h.timekeeper.min.Store(int64(100 * time.Millisecond))
	stuck := make(chan StuckCall, 1)
	h.OnStuckCall(func(sc StuckCall) { stuck <- sc })
	var out Result
	// A trusted call cannot be interrupted: it runs to the end, but the
	// watchdog reports it and marks the version unhealthy.
	if err := h.Plugin("bad").Call(context.Background(), abi.OpRequestDecode, CallInput{RequestID: 42, Payload: []byte("spin:400")}, &out); err != nil {
		t.Fatal(err)
	}
	select {
	case sc := <-stuck:
		if sc.Plugin != "bad" || sc.Op != abi.OpRequestDecode || sc.RequestID != 42 || sc.Mode != ModeTrusted || sc.Running < 100*time.Millisecond {
			t.Errorf("stuck call %+v", sc)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watchdog did not report")
	}
	v := h.Plugin("bad").Pin()
	defer v.Release()
	if v.Healthy() {
		t.Error("version still healthy")
	}
	if n := h.Plugin("bad").metrics.stuck.Load(); n != 1 {
		t.Errorf("stuck metric %d", n)
	}
}

func TestTimekeeper_CallerDeadline(t *testing.T) {
	pc := plugin("bad", "bad", "translator", ModeStrict)
	pc.Limits.CallTimeoutMS = 10000
	h := newTestHost(t, pc)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	var out Result
	err := h.Plugin("bad").Call(ctx, abi.OpRequestDecode, decode("loop"), &out)
	if d := time.Since(start); err == nil || d > 2*time.Second {
		t.Fatalf("err %v after %v; want ErrTimeout at the caller's deadline", err, d)
	}
	okAfter(t, h.Plugin("bad"))
}

// An idle host's timekeeper parks instead of waking every tickMax; the
// next call wakes it, and a strict deadline is enforced as before.
func TestTimekeeper_ParksWhenIdle(t *testing.T) {
	pc := plugin("bad", "bad", "translator", ModeStrict)
	pc.Limits.CallTimeoutMS = 100
	h := newTestHost(t, pc)
	k := &h.timekeeper
	waitFor(t, "the timekeeper parked", func() bool { return k.parks.Load() > 0 && k.parked.Load() })
	scans := k.scans.Load()
	time.Sleep(200 * time.Millisecond) // 20 × tickMax
	if n := k.scans.Load() - scans; n > 1 {
		t.Fatalf("parked timekeeper scanned %d times in 200 ms", n)
	}
	parks := k.parks.Load()
	start := time.Now()
	var out Result
	err := h.Plugin("bad").Call(context.Background(), abi.OpRequestDecode, decode("loop"), &out)
	if d := time.Since(start); !errors.Is(err, ErrTimeout) || d > 2*time.Second {
		t.Fatalf("err %v after %v; want ErrTimeout at call_timeout_ms", err, d)
	}
	if k.scans.Load() == scans {
		t.Error("the call did not wake the timekeeper")
	}
	okAfter(t, h.Plugin("bad"))
	waitFor(t, "the timekeeper parked again", func() bool { return k.parks.Load() > parks && k.parked.Load() })
}
