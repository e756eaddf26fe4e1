package pluginhost

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
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
	waitFor(t, "the caller waiting for the instance", func() bool { return v.pool.waiting.Load() == 1 })
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
	testutil.WaitFor(t, what, 20*time.Second, cond)
}

// A call under WithoutWaitLimit (a streaming chunk) waits past
// pool.wait_ms for a busy pool, in arrival order, until an instance comes
// back; its ctx's end or the plugin's close still ends the wait.
func TestPool_WithoutWaitLimit(t *testing.T) {
	pc := plugin("good", "good", "translator", ModeTrusted)
	pc.Pool = PoolConfig{Min: 1, Max: 1, WaitMS: 20}
	h := newTestHost(t, pc)
	p := h.Plugin("good")
	v := p.Pin()
	defer v.Release()
	held, err := v.pool.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithoutWaitLimit(context.Background())
	type got struct {
		id  int
		in  *instance
		err error
	}
	gotc := make(chan got, 3)
	for id := range 3 {
		go func() {
			in, err := v.pool.get(ctx)
			gotc <- got{id, in, err}
		}()
		waitFor(t, "the waiter queued", func() bool { return v.pool.waiting.Load() == int32(id+1) })
	}
	time.Sleep(100 * time.Millisecond) // 5 × pool.wait_ms
	select {
	case g := <-gotc:
		t.Fatalf("waiter %d returned while the instance was held: %v", g.id, g.err)
	default:
	}
	in := held
	for want := range 3 {
		v.pool.put(in, false)
		g := <-gotc
		if g.err != nil || g.id != want {
			t.Fatalf("got waiter %d (err %v), want waiter %d first", g.id, g.err, want)
		}
		in = g.in
	}
	// Its ctx still bounds the wait.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error)
	go func() {
		_, err := v.pool.get(cctx)
		errc <- err
	}()
	waitFor(t, "the waiter queued", func() bool { return v.pool.waiting.Load() == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, ErrPoolTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: err %v", err)
	}
	// A plain call without a deadline still gives up after pool.wait_ms.
	var out Result
	if err := v.Call(context.Background(), abi.OpErrorEncode, errorInput, &out); !errors.Is(err, ErrPoolTimeout) {
		t.Fatalf("no deadline, no WithoutWaitLimit: err %v, want ErrPoolTimeout", err)
	}
	// The plugin's close ends it too.
	go func() {
		_, err := v.pool.get(ctx)
		errc <- err
	}()
	waitFor(t, "the waiter queued", func() bool { return v.pool.waiting.Load() == 1 })
	v.pool.close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("closed pool: err %v, want ErrClosed", err)
	}
	v.pool.put(in, false)
}
