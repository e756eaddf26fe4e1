package server

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// cache keeps the last result of load for ttl and shares one in-flight load
// among all callers (singleflight), so a flood of requests costs at most one
// NVML poll per ttl. Errors are cached like values: when NVML is down, asking
// again within ttl would give the same answer.
//
// The value is shared between callers and must be treated as read-only.
type cache[T any] struct {
	ttl  time.Duration
	now  func() time.Time
	load func(context.Context) (T, error)

	mu     sync.Mutex
	have   bool
	at     time.Time
	val    T
	err    error
	flight *flight[T]
}

type flight[T any] struct {
	done chan struct{}
	val  T
	err  error
}

func newCache[T any](ttl time.Duration, now func() time.Time, load func(context.Context) (T, error)) *cache[T] {
	return &cache[T]{ttl: ttl, now: now, load: load}
}

// get returns a result no older than ttl. The load itself runs detached from
// ctx, so one caller giving up does not fail the others; get returns early
// with ctx's error if ctx ends first.
func (c *cache[T]) get(ctx context.Context) (T, error) {
	c.mu.Lock()
	if c.have && c.now().Sub(c.at) < c.ttl {
		v, err := c.val, c.err
		c.mu.Unlock()
		return v, err
	}
	f := c.flight
	if f == nil {
		f = &flight[T]{done: make(chan struct{})}
		c.flight = f
		go c.run(context.WithoutCancel(ctx), f)
	}
	c.mu.Unlock()

	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func (c *cache[T]) run(ctx context.Context, f *flight[T]) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			f.val, f.err = zero, fmt.Errorf("internal error: panic: %v", p)
		}
		c.mu.Lock()
		c.have, c.at, c.val, c.err = true, c.now(), f.val, f.err
		c.flight = nil
		c.mu.Unlock()
		close(f.done)
	}()
	f.val, f.err = c.load(ctx)
}
