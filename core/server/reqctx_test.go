package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/config"
)

type ctxKey struct{}

func reqCtxServer(t testing.TB, base context.Context, timeout time.Duration) *Server {
	t.Helper()
	cfg := config.Default()
	cfg.Timeouts.Request = config.Duration(timeout)
	return &Server{cfg: cfg, baseCtx: base}
}

// A request's context ends at its deadline with DeadlineExceeded (also
// its context.Cause), carries the base context's values, and a stale
// firing of the pooled exchange's timer leaves the next request alone.
func TestReqCtx_Deadline(t *testing.T) {
	s := reqCtxServer(t, context.WithValue(context.Background(), ctxKey{}, "v"), 30*time.Millisecond)
	ex := newExchange()
	ex.begin(s, nil)
	ctx := ex.ctx
	if dl, ok := ctx.Deadline(); !ok || !dl.Equal(ex.start.Add(30*time.Millisecond)) {
		t.Fatalf("deadline %v %v", dl, ok)
	}
	if v := ctx.Value(ctxKey{}); v != "v" {
		t.Fatalf("value %v", v)
	}
	if ctx.Err() != nil {
		t.Fatal("ended early:", ctx.Err())
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the deadline did not end the context")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || context.Cause(ctx) != context.DeadlineExceeded {
		t.Fatalf("err %v cause %v", ctx.Err(), context.Cause(ctx))
	}
	ex.releaseHeld()

	s.cfg.Timeouts.Request = config.Duration(time.Hour)
	ex.begin(s, nil)
	ex.expire() // a firing meant for the request before
	if err := ex.ctx.Err(); err != nil {
		t.Fatal("a stale timer ended the next request:", err)
	}
	next := ex.ctx
	ex.releaseHeld()
	if !errors.Is(next.Err(), context.Canceled) {
		t.Fatalf("after the request: %v", next.Err())
	}
	if n := s.live.len(); n != 0 {
		t.Fatalf("%d requests left in the live set", n)
	}
}

// Cancelling the request (the client went away) ends its context and,
// synchronously, the contexts derived from it; context.AfterFunc
// callbacks run, unless stopped; the Done channel of an ended context is
// closed also when first asked for after the end.
func TestReqCtx_CancelAndDerived(t *testing.T) {
	s := reqCtxServer(t, context.Background(), time.Hour)
	ex := newExchange()
	ex.begin(s, nil)
	child, cancelChild := context.WithTimeout(ex.ctx, time.Hour)
	defer cancelChild()
	ran := make(chan struct{})
	context.AfterFunc(ex.ctx, func() { close(ran) })
	stopped := context.AfterFunc(ex.ctx, func() { t.Error("a stopped AfterFunc ran") })
	if !stopped() {
		t.Fatal("stop before the end reported false")
	}
	ex.cancel()
	if !errors.Is(ex.ctx.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("ctx %v, derived %v", ex.ctx.Err(), child.Err())
	}
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("AfterFunc did not run")
	}
	select {
	case <-ex.ctx.Done():
	default:
		t.Fatal("Done of an ended context is open")
	}
	late := false
	ex.rc.Load().AfterFunc(func() { late = true })
	if !late {
		t.Fatal("AfterFunc on an ended context did not run f")
	}
	ex.releaseHeld()
}

// The server's end (its base context cancelled) cancels the requests in
// flight, and any begun after it.
func TestReqCtx_BaseEnds(t *testing.T) {
	base, cancel := context.WithCancel(context.Background())
	s := reqCtxServer(t, base, time.Hour)
	a, b := newExchange(), newExchange()
	a.begin(s, nil)
	done := a.ctx.Done()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the base's end did not cancel the request in flight")
	}
	if !errors.Is(a.ctx.Err(), context.Canceled) {
		t.Fatal(a.ctx.Err())
	}
	deadline := time.Now().Add(5 * time.Second)
	for !s.live.ended.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b.begin(s, nil)
	if !errors.Is(b.ctx.Err(), context.Canceled) {
		t.Fatalf("a request begun after the end: %v", b.ctx.Err())
	}
	a.releaseHeld()
	b.releaseHeld()
}

// BenchmarkRequestContext is a request's context work without the rest
// of the request: made, a backend call's cancellation registered and
// unregistered, ended. "withDeadline" is what the gateway did before
// reqCtx (context.WithDeadline on the server's context, context.AfterFunc
// for the backend call), "reqCtx" what begin, DoContext and releaseHeld
// do now.
func BenchmarkRequestContext(b *testing.B) {
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	hook := func() {}
	b.Run("withDeadline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := context.WithDeadline(base, time.Now().Add(10*time.Minute))
			stop := context.AfterFunc(ctx, hook)
			stop()
			cancel()
		}
	})
	b.Run("reqCtx", func(b *testing.B) {
		s := reqCtxServer(b, base, 10*time.Minute)
		ex := newExchange()
		b.ReportAllocs()
		for b.Loop() {
			ex.start = time.Now()
			d := s.cfg.Timeouts.Request.D()
			c := newReqCtx(s.requestValues(), ex.start.Add(d))
			ex.ctx = c
			ex.rc.Store(c)
			s.live.add(c)
			ex.armDeadline(d)
			id, _ := c.OnEnd(hook)
			c.Unhook(id)
			ex.dlTimer.Stop()
			s.live.remove(c)
			c.cancel(context.Canceled)
			ex.rc.Store(nil)
		}
	})
}

// The live set unlinks requests in any order and ends the ones left.
func TestReqCtx_LiveSet(t *testing.T) {
	var l liveSet
	cs := make([]*reqCtx, 5)
	for i := range cs {
		cs[i] = newReqCtx(context.Background(), time.Now().Add(time.Hour))
		l.add(cs[i])
	}
	for _, i := range []int{0, 4, 2} { // the last added, the first, one inside
		l.remove(cs[i])
		l.remove(cs[i]) // twice: harmless
	}
	if n := l.len(); n != 2 {
		t.Fatalf("%d left, want 2", n)
	}
	l.end()
	for i, c := range cs {
		ended := c.Err() != nil
		if want := i == 1 || i == 3; ended != want {
			t.Errorf("request %d ended %v, want %v", i, ended, want)
		}
	}
	late := newReqCtx(context.Background(), time.Now().Add(time.Hour))
	l.add(late)
	if !errors.Is(late.Err(), context.Canceled) {
		t.Fatalf("added after the end: %v", late.Err())
	}
}
