package pluginhost

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

func TestPool_Get_Timeout(t *testing.T) {
	pc := plugin("good", "good", "translator", ModeTrusted)
	pc.Pool = PoolConfig{Min: 1, Max: 1, WaitMS: 50}
	h := newTestHost(t, pc)
	p := h.Plugin("good")
	v := p.Pin()
	defer v.Release()
	held, err := v.pool.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out Result
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := v.Call(ctx, abi.OpErrorEncode, errorInput, &out); !errors.Is(err, ErrPoolTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want ErrPoolTimeout", err)
	}
	start := time.Now()
	if err := v.Call(context.Background(), abi.OpErrorEncode, errorInput, &out); !errors.Is(err, ErrPoolTimeout) {
		t.Fatalf("no deadline: err %v, want ErrPoolTimeout", err)
	}
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Errorf("gave up after %v, want pool.wait_ms", d)
	}
	// A waiter gets the instance as soon as it is back.
	done := make(chan error)
	go func() {
		var out Result
		done <- v.Call(context.Background(), abi.OpErrorEncode, errorInput, &out)
	}()
	time.Sleep(10 * time.Millisecond)
	v.pool.put(held, false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := p.metrics.poolFailures.Load(); n != 2 {
		t.Errorf("pool failures %d", n)
	}
}

func TestPool_Put_Recycles(t *testing.T) {
	pc := plugin("good", "good", "translator", ModeTrusted)
	pc.Pool = PoolConfig{Min: 1, Max: 2, MaxCalls: 5}
	h := newTestHost(t, pc)
	p := h.Plugin("good")
	var out Result
	for range 20 {
		if err := p.Call(context.Background(), abi.OpErrorEncode, errorInput, &out); err != nil {
			t.Fatal(err)
		}
	}
	// 20 calls on instances recycled every 5 calls (the self-test counts as one).
	if d := p.metrics.discarded.Load(); d < 3 {
		t.Errorf("discarded %d instances, want >= 3", d)
	}
	v := p.Pin()
	defer v.Release()
	if st := v.Stats(); st.Live > 2 {
		t.Errorf("live %d > max", st.Live)
	}
}

func TestPool_Refill_Min(t *testing.T) {
	pc := plugin("good", "good", "translator", ModeTrusted)
	pc.Pool = PoolConfig{Min: 3, Max: 4}
	h := newTestHost(t, pc)
	v := h.Plugin("good").Pin()
	defer v.Release()
	waitFor(t, "pool filled to min", func() bool { return v.Stats().Idle == 3 })
}

func TestPool_Concurrent(t *testing.T) {
	pc := plugin("good", "good", "translator", ModeTrusted)
	pc.Pool = PoolConfig{Min: 1, Max: 2, WaitMS: 5000}
	h := newTestHost(t, pc)
	p := h.Plugin("good")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out Result
			for range 100 {
				if err := p.Call(context.Background(), abi.OpErrorEncode, errorInput, &out); err != nil {
					t.Error(err)
					return
				}
				if string(out.Payload) != `{"v":"A","msg":"no such model"}` {
					t.Errorf("payload %s", out.Payload)
					return
				}
			}
		}()
	}
	wg.Wait()
	v := p.Pin()
	defer v.Release()
	if st := v.Stats(); st.Live > 2 {
		t.Errorf("live %d > max 2", st.Live)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPool_TrapsCostOnlyTheirRequests: clients that make the plugin trap
// over and over cost their own requests only. Discarded instances are
// replaced in the background into the slot they held, so the pool never
// shrinks and the trapping callers never instantiate on their request path
// ahead of everybody else; callers with good input keep being served with
// no ErrPoolTimeout (which the gateway answers with plugin_busy 503).
func TestPool_TrapsCostOnlyTheirRequests(t *testing.T) {
	const trappers, good = 4, 4
	pc := plugin("bad", "bad", "translator", ModeTrusted)
	pc.Pool = PoolConfig{Min: 3, Max: trappers, WaitMS: 1000}
	cfg := &Config{ABI: abi.VersionMajor, CacheDir: cacheDir, Plugins: []PluginConfig{pc}}
	h, err := New(context.Background(), cfg, testDir, nil) // traps log; not the subject here
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	p := h.Plugin("bad")
	v := p.Pin()
	defer v.Release()
	waitFor(t, "pool filled to min", func() bool { return v.Stats().Idle == 3 })

	var stop atomic.Bool
	var traps, goodOK, goodBusy, other, goodMax atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for i := range trappers + good {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out Result
			body := "fine"
			if i < trappers {
				body = "trap"
			}
			for !stop.Load() {
				start := time.Now()
				err := p.Call(context.Background(), abi.OpRequestDecode, decode(body), &out)
				if d := int64(time.Since(start)); body == "fine" && d > goodMax.Load() {
					goodMax.Store(d) // racy max: a log figure only
				}
				switch {
				case body == "trap" && errors.Is(err, ErrTrap):
					traps.Add(1)
				case body == "fine" && err == nil:
					goodOK.Add(1)
				case body == "fine" && errors.Is(err, ErrPoolTimeout):
					goodBusy.Add(1)
				case body == "trap" && errors.Is(err, ErrPoolTimeout):
					// a trapping client may wait its turn too
				default:
					other.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	t.Logf("traps %d, good calls %d ok / %d ErrPoolTimeout (slowest %v), discarded %d, slow-path instantiations %d",
		traps.Load(), goodOK.Load(), goodBusy.Load(), time.Duration(goodMax.Load()).Round(time.Millisecond),
		p.metrics.discarded.Load(), p.metrics.slowPath.Load())
	if e := firstErr.Load(); e != nil {
		t.Fatalf("%d unexpected results, first: %v", other.Load(), *e)
	}
	if traps.Load() == 0 || goodOK.Load() == 0 {
		t.Fatalf("no progress: %d traps, %d good calls", traps.Load(), goodOK.Load())
	}
	if n := goodBusy.Load(); n != 0 {
		t.Errorf("%d good calls failed with ErrPoolTimeout while others trapped", n)
	}
	waitFor(t, "replacements settle", func() bool { return v.pool.pending.Load() == 0 })
	if st := v.Stats(); st.Live > trappers || st.Live < pc.Pool.Min {
		t.Errorf("live %d, want between min %d and max %d", st.Live, pc.Pool.Min, trappers)
	}
}
