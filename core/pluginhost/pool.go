package pluginhost

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// pool is the bounded instance pool of one plugin version: a LIFO stack of
// idle instances, a hand-off channel for callers waiting on a full pool, and
// a live counter. Not a sync.Pool: an instance dropped by the GC would never
// be closed (wazero keeps every module linked in its store until Close).
//
// LIFO matters: each instance owns megabytes of linear memory, and reusing
// the instance that just ran keeps it in the CPU caches. Measured with the
// four calls of one chat request, a FIFO rotation over three instances
// cost 2–3× more guest time than reusing the hottest one.
type pool struct {
	v        *Version
	stackMu  sync.Mutex
	stack    []*instance    // idle instances, most recently used last
	idle     chan *instance // hand-off to waiters (cap = max)
	live     atomic.Int32   // instances in existence or being created
	pending  atomic.Int32   // of which being created in the background
	waiting  atomic.Int32   // callers blocked in get
	min, max int32
	maxCalls int
	maxMem   uint32 // recycle an instance whose linear memory grew past this (pool.recycle_mb)
	wait     time.Duration

	closed    atomic.Bool
	done      chan struct{} // closed by close: wakes waiters
	refilling atomic.Bool
	bg        sync.WaitGroup // background instantiations

	mu  sync.Mutex
	all map[*instance]struct{} // every live instance, for the watchdog and stats
}

func newPool(v *Version, pc *PluginConfig) *pool {
	p := &pool{
		v:        v,
		idle:     make(chan *instance, pc.Pool.Max),
		stack:    make([]*instance, 0, pc.Pool.Max),
		min:      int32(pc.Pool.Min),
		max:      int32(pc.Pool.Max),
		maxCalls: pc.Pool.MaxCalls,
		maxMem:   uint32(min(pc.Pool.RecycleMB, pc.Limits.MemoryMB*3/4, 4095)) << 20,
		wait:     time.Duration(pc.Pool.WaitMS) * time.Millisecond,
		done:     make(chan struct{}),
		all:      map[*instance]struct{}{},
	}
	return p
}

// get checks out an instance: an idle one if any; else, when background
// instantiations are already on their way for fewer callers than are
// waiting, it waits for one of them; else a new one while live < max (the
// slow path, logged); else it waits for one until ctx ends (or p.wait when
// ctx has no deadline and no WithoutWaitLimit).
func (p *pool) get(ctx context.Context) (*instance, error) {
	if in := p.pop(); in != nil {
		return in, nil
	}
	select {
	case in := <-p.idle:
		return in, nil
	default:
	}
	if p.closed.Load() {
		return nil, ErrClosed
	}
	if p.pending.Load() > p.waiting.Load() {
		// A replacement is being created in the background: it is
		// nearer than a new instantiation of our own.
		return p.await(ctx)
	}
	if p.reserve() {
		start := time.Now()
		in, err := p.create(ctx)
		if err != nil {
			return nil, err
		}
		p.v.plugin.metrics.slowPath.Add(1)
		p.v.logger().LogAttrs(ctx, slog.LevelWarn, "plugin instance created on the request path",
			slog.Float64("dur_ms", float64(time.Since(start).Microseconds())/1000), slog.Int("live", int(p.live.Load())))
		return in, nil
	}
	return p.await(ctx)
}

func (p *pool) await(ctx context.Context) (*instance, error) {
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	// A release that ran before waiting was raised pushed to the stack.
	if in := p.pop(); in != nil {
		return in, nil
	}
	var timeout <-chan time.Time
	if _, ok := ctx.Deadline(); !ok && ctx.Value(noWaitLimitKey{}) == nil {
		t := time.NewTimer(p.wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case in := <-p.idle:
		return in, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrPoolTimeout, ctx.Err())
	case <-timeout:
		return nil, fmt.Errorf("%w: waited %v", ErrPoolTimeout, p.wait)
	case <-p.done:
		return nil, ErrClosed
	}
}

type noWaitLimitKey struct{}

// WithoutWaitLimit returns ctx for calls that, when every instance is
// busy, wait for one until ctx ends or the plugin closes, however long
// that takes, instead of failing with ErrPoolTimeout after pool.wait_ms.
// It is for calls of work already admitted and under way, whose failure
// costs more than its delay: the next chunk of a stream that is already
// streaming. Waiters are served in arrival order (the pool's hand-off
// channel queues blocked receivers first in, first out). An instance always
// comes back: calls are CPU-bound, a strict call ends by call_timeout_ms and
// a trusted one past its hard limit is reported by the watchdog. So a long
// wait means the process is short of CPU, where a late chunk is the right
// answer and a cut stream is not. A deadline on ctx still bounds the wait.
func WithoutWaitLimit(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWaitLimitKey{}, true)
}

// reserve claims a slot for a new instance if live < max.
func (p *pool) reserve() bool {
	for {
		n := p.live.Load()
		if n >= p.max {
			return false
		}
		if p.live.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// create instantiates into a reserved slot; on failure the slot is freed.
func (p *pool) create(ctx context.Context) (*instance, error) {
	in, err := p.v.newInstance(ctx)
	if err != nil {
		p.live.Add(-1)
		return nil, err
	}
	p.mu.Lock()
	p.all[in] = struct{}{}
	p.mu.Unlock()
	return in, nil
}

// put returns an instance after a call. It is discarded when the call
// went wrong (trap, timeout, protocol violation), after max_calls, when its
// memory grew past the recycle threshold, or when the pool is closed; a
// discarded instance is replaced in the background.
func (p *pool) put(in *instance, bad bool) {
	in.calls++
	mem := in.memBytes()
	in.lastMem.Store(mem)
	if bad || p.closed.Load() || (p.maxCalls > 0 && in.calls >= p.maxCalls) || mem > p.maxMem {
		p.replace(in)
		return
	}
	p.release(in)
}

// release hands a healthy instance to a waiter, or pushes it on the stack.
func (p *pool) release(in *instance) {
	handed := false
	if p.waiting.Load() > 0 {
		select {
		case p.idle <- in:
			handed = true
		default:
		}
	}
	if !handed {
		p.stackMu.Lock()
		p.stack = append(p.stack, in)
		p.stackMu.Unlock()
	}
	if p.closed.Load() {
		p.drain() // close raced with us
	}
}

// pop takes the most recently used idle instance, or nil.
func (p *pool) pop() *instance {
	p.stackMu.Lock()
	defer p.stackMu.Unlock()
	n := len(p.stack)
	if n == 0 {
		return nil
	}
	in := p.stack[n-1]
	p.stack[n-1] = nil
	p.stack = p.stack[:n-1]
	return in
}

// replace discards in and, unless the pool is closed, creates its
// replacement in the background at once. The replacement inherits in's
// slot: a discarded instance never counts against max (so a caller that
// traps again and again cannot block the replacement of its own
// instances), and live never drops below what the pool had, so callers
// with good input find an instance as before while others trap. The
// caller that got in returns without waiting for either the close or the
// instantiation.
func (p *pool) replace(in *instance) {
	p.mu.Lock()
	delete(p.all, in)
	p.mu.Unlock()
	p.v.plugin.metrics.discarded.Add(1)
	if p.closed.Load() {
		in.close()
		p.live.Add(-1)
		return
	}
	p.pending.Add(1)
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		in.close() // first: its memory goes before the new instance's comes
		p.createPending()
	}()
}

// createPending instantiates into a slot already counted in live and
// pending, then hands the instance to a waiter or the idle stack. When
// instantiation fails the slot is freed and refill takes over (it retries
// with a backoff while callers wait).
func (p *pool) createPending() {
	if p.closed.Load() {
		p.pending.Add(-1)
		p.live.Add(-1)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	in, err := p.create(ctx) // frees the slot on failure
	cancel()
	if err != nil {
		p.pending.Add(-1)
		p.v.logger().Error("plugin instance replacement failed", slog.Any("err", err))
		p.refill()
		return
	}
	p.release(in)
	p.pending.Add(-1) // after release: a caller that saw it pending finds the instance
}

// refill tops the pool up in the background: to min, and further while
// more callers wait than instances are on their way (up to max). One
// refiller runs at a time.
func (p *pool) refill() {
	if p.closed.Load() || !p.needMore() || !p.refilling.CompareAndSwap(false, true) {
		return
	}
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		defer p.refilling.Store(false)
		failures := 0
		for !p.closed.Load() && p.needMore() && p.reserve() {
			p.pending.Add(1)
			ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
			in, err := p.create(ctx)
			cancel()
			if err != nil {
				p.pending.Add(-1)
				failures++
				p.v.logger().Error("plugin instance refill failed", slog.Any("err", err))
				if failures >= 3 {
					return
				}
				time.Sleep(time.Duration(failures) * 50 * time.Millisecond)
				continue
			}
			p.release(in)
			p.pending.Add(-1)
		}
	}()
}

// needMore: below min, or more callers waiting than instances on their way.
func (p *pool) needMore() bool {
	live := p.live.Load()
	return live < p.min || (p.waiting.Load() > p.pending.Load() && live < p.max)
}

// drain closes every idle instance.
func (p *pool) drain() {
	for {
		in := p.pop()
		if in == nil {
			break
		}
		p.mu.Lock()
		delete(p.all, in)
		p.mu.Unlock()
		in.close()
		p.live.Add(-1)
	}
	for {
		select {
		case in := <-p.idle:
			p.mu.Lock()
			delete(p.all, in)
			p.mu.Unlock()
			in.close()
			p.live.Add(-1)
		default:
			return
		}
	}
}

// close stops the pool: waiters fail with ErrClosed, background
// instantiations finish, idle instances are closed. Instances still checked
// out are closed by put.
func (p *pool) close() {
	if !p.closed.CompareAndSwap(false, true) {
		return
	}
	close(p.done)
	p.bg.Wait()
	p.drain()
}

// stats counts live and idle instances and the largest linear memory.
func (p *pool) stats() (live, idle int, maxMem uint32) {
	p.stackMu.Lock()
	idle = len(p.idle) + len(p.stack)
	p.stackMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	for in := range p.all {
		maxMem = max(maxMem, in.lastMem.Load())
	}
	return len(p.all), idle, maxMem
}

// forEach calls f for every live instance (the watchdog).
func (p *pool) forEach(f func(*instance)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for in := range p.all {
		f(in)
	}
}
