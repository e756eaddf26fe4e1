//go:build !race

package pluginhost

// Timing under the race detector says nothing (wazero runs ~10x slower
// under it): this test runs in the non-race pass of make test.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

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
