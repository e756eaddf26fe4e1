package sched

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// waitFor polls cond (a scheduler state the test cannot be told of) for
// up to 5 s: it only detects hangs.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, 5*time.Second, func() bool { runtime.Gosched(); return cond() })
}

type admitResult struct {
	i   int
	l   Lease
	err error
}

func admitAsync(ctx context.Context, f *Fair, i int, req *Request, out chan<- admitResult) {
	go func() {
		l, err := f.Admit(ctx, req)
		out <- admitResult{i, l, err}
	}()
}

func TestFair_Errors(t *testing.T) {
	reg, bs := registry(t, 1)
	f := NewFair(FairOptions{Registry: reg, MaxWait: -1})
	ctx := context.Background()
	_, err := f.Admit(ctx, &Request{Model: "nope"})
	apiErr(t, err, 404, "model_not_found")
	req := &Request{Model: "m"}
	l, err := f.Admit(ctx, req)
	if err != nil || l.Backend() != bs[0] {
		t.Fatalf("admit: %v %v", l, err)
	}
	if _, err := f.Admit(ctx, req); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("admit while held: %v", err)
	}
	// MaxWait < 0: busy at once.
	ae := apiErr(t, must2(f.Admit(ctx, &Request{Model: "m"})), 503, "backend_busy")
	if ae.RetryAfter != RetryAfterBusy {
		t.Fatalf("Retry-After %d", ae.RetryAfter)
	}
	l.Release()
	l.Release() // idempotent
	if bs[0].InFlight() != 0 {
		t.Fatalf("in flight %d", bs[0].InFlight())
	}
	set(bs[0], false, testAdapter, "m")
	ae = apiErr(t, must2(f.Admit(ctx, &Request{Model: "m"})), 503, "backend_unavailable")
	if ae.RetryAfter != RetryAfterUnavailable {
		t.Fatalf("Retry-After %d", ae.RetryAfter)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	apiErr(t, must2(f.Admit(cctx, &Request{Model: "m"})), 503, "request_cancelled")
}

func must2(_ Lease, err error) error { return err }

// The capacity wait ends with 503 backend_busy (Retry-After) and leaves
// nothing queued.
func TestFair_CapacityWaitTimeout(t *testing.T) {
	reg, bs := registry(t, 1)
	f := NewFair(FairOptions{Registry: reg, MaxWait: 20 * time.Millisecond})
	held, err := f.Admit(context.Background(), &Request{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Admit(context.Background(), &Request{Model: "m", User: "u"})
	ae := apiErr(t, err, 503, "backend_busy")
	if ae.RetryAfter != RetryAfterBusy || !errors.Is(err, backend.ErrQueueTimeout) {
		t.Fatalf("busy error: %+v", ae)
	}
	if n := f.Waiting(); n != 0 {
		t.Fatalf("%d still waiting", n)
	}
	held.Release()
	if bs[0].InFlight() != 0 {
		t.Fatalf("in flight %d", bs[0].InFlight())
	}
	// A ctx deadline while waiting is busy too.
	held, _ = f.Admit(context.Background(), &Request{Model: "m"})
	f.maxWait = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = f.Admit(ctx, &Request{Model: "m"})
	apiErr(t, err, 503, "backend_busy")
	held.Release()
}

// A client that leaves while queued leaves the queue at once; the slot
// it waited for goes to the next waiter.
func TestFair_CancelLeavesQueue(t *testing.T) {
	reg, bs := registry(t, 1)
	f := NewFair(FairOptions{Registry: reg, MaxWait: time.Minute})
	held, err := f.Admit(context.Background(), &Request{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan admitResult, 2)
	ctx, cancel := context.WithCancel(context.Background())
	admitAsync(ctx, f, 0, &Request{Model: "m", User: "leaver"}, out)
	waitFor(t, "the first waiter", func() bool { return f.Waiting() == 1 })
	admitAsync(context.Background(), f, 1, &Request{Model: "m", User: "stayer"}, out)
	waitFor(t, "the second waiter", func() bool { return f.Waiting() == 2 })
	cancel()
	r := <-out
	if r.i != 0 || r.l != nil || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled admit: %+v", r)
	}
	apiErr(t, r.err, 503, "request_cancelled")
	if n := f.Waiting(); n != 1 {
		t.Fatalf("%d waiting after the cancel, want 1", n)
	}
	held.Release()
	r = <-out
	if r.i != 1 || r.err != nil || r.l.Backend() != bs[0] {
		t.Fatalf("stayer: %+v", r)
	}
	r.l.Release()
	if bs[0].InFlight() != 0 || f.Waiting() != 0 {
		t.Fatalf("in flight %d, waiting %d", bs[0].InFlight(), f.Waiting())
	}
}

// Each freed slot wakes exactly one waiter, handed the slot directly: no
// thundering herd, no polling.
func TestFair_OneWaiterWokenPerSlot(t *testing.T) {
	reg, bs := registry(t, 2)
	f := NewFair(FairOptions{Registry: reg, MaxWait: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h1, _ := f.Admit(ctx, &Request{Model: "m"})
	h2, _ := f.Admit(ctx, &Request{Model: "m"})
	const n = 6
	out := make(chan admitResult, n)
	for i := range n {
		admitAsync(ctx, f, i, &Request{Model: "m", User: fmt.Sprint("u", i)}, out)
	}
	waitFor(t, "6 waiters", func() bool { return f.Waiting() == n })
	for k, h := range []Lease{h1, h2} {
		h.Release()
		// The hand-over happened inside Release.
		f.mu.Lock()
		grants, waiting := f.grants, f.nwaiting
		f.mu.Unlock()
		if grants != uint64(k+1) || waiting != n-k-1 || bs[0].InFlight() != 2 {
			t.Fatalf("after release %d: %d granted, %d waiting, %d in flight", k+1, grants, waiting, bs[0].InFlight())
		}
		r := <-out
		if r.err != nil {
			t.Fatal(r.err)
		}
		select {
		case r2 := <-out:
			t.Fatalf("a second waiter returned: %+v", r2)
		default:
		}
		defer r.l.Release()
	}
	cancel()
	for range n - 2 {
		if r := <-out; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("waiter %d: %v", r.i, r.err)
		}
	}
}

// The slot freed goes to the highest-priority waiter: the user with credit
// left, not the one who arrived first.
func TestFair_FreedSlotGoesToBestWaiter(t *testing.T) {
	reg, _ := registry(t, 1)
	f := NewFair(FairOptions{Registry: reg, MaxWait: time.Minute, BurstCredit: -1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held, _ := f.Admit(ctx, &Request{Model: "m"})
	out := make(chan admitResult, 4)
	// heavy queues three requests, then light one; heavy's first one is
	// served, after which light's round comes before heavy's second.
	for i := range 3 {
		admitAsync(ctx, f, i, &Request{Model: "m", User: "heavy"}, out)
		waitFor(t, "heavy queued", func() bool { return f.Waiting() == i+1 })
	}
	admitAsync(ctx, f, 3, &Request{Model: "m", User: "light"}, out)
	waitFor(t, "light queued", func() bool { return f.Waiting() == 4 })
	var order []int
	for range 4 {
		held.Release()
		r := <-out
		if r.err != nil {
			t.Fatal(r.err)
		}
		order = append(order, r.i)
		held = r.l
	}
	held.Release()
	if fmt.Sprint(order) != "[0 3 1 2]" {
		t.Fatalf("service order %v, want [0 3 1 2]", order)
	}
}

// Decision is filled on both paths when recording.
func TestFair_RecordsDecision(t *testing.T) {
	reg, bs := registry(t, 1, 1)
	set(bs[1], false, testAdapter, "m")
	c := &simClock{now: time.Unix(1e9, 0)}
	f := NewFair(FairOptions{Registry: reg, MaxWait: time.Minute, Record: true, Clock: c})
	d1 := &Decision{}
	l1, err := f.Admit(context.Background(), &Request{Model: "m", User: "a", Weight: 2, Decision: d1})
	if err != nil {
		t.Fatal(err)
	}
	if d1.Chosen != "a" || len(d1.Candidates) != 2 || d1.Candidates[1].Failed != "healthy" || d1.Weight != 2 || d1.Position != 0 {
		t.Fatalf("fast path decision: %+v", d1)
	}
	d2 := &Decision{}
	out := make(chan admitResult, 1)
	admitAsync(context.Background(), f, 0, &Request{Model: "m", User: "b", Weight: 3, EstTokens: 500, Decision: d2}, out)
	waitFor(t, "b queued", func() bool { return f.Waiting() == 1 })
	f.mu.Lock()
	c.now = c.now.Add(3 * time.Second) // under f.mu: the clock is read under it
	f.mu.Unlock()
	l1.Release()
	r := <-out
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.l.Release()
	if d2.Chosen != "a" || d2.Weight != 3 || d2.Deficit != 3*DefaultFairBurstCredit || d2.QueueWait != 3e6 || len(d2.Candidates) != 2 {
		t.Fatalf("queued decision: %+v", d2)
	}
	// Not recording: Decision untouched.
	f.record = false
	d3 := &Decision{Chosen: "x"}
	l, _ := f.Admit(context.Background(), &Request{Model: "m", Decision: d3})
	l.Release()
	if d3.Chosen != "x" {
		t.Fatalf("decision written while not recording: %+v", d3)
	}
}

// Exclude: a retry never goes back to a backend it tried while another
// candidate exists, even one that is full: it waits in the queue for that
// one rather than take the tried backend's free slot (the fast path took
// any free slot, and sent half of a failing backend's retries back to it).
// Only when no other candidate is left does the tried one serve.
func TestFair_Exclude(t *testing.T) {
	reg, bs := registry(t, 1, 1)
	a, b := bs[0], bs[1]
	f := NewFair(FairOptions{Registry: reg, MaxWait: time.Minute})
	ctx := context.Background()
	req := &Request{Model: "m", Exclude: []*backend.Backend{a}}
	l, err := f.Admit(ctx, req)
	if err != nil || l.Backend() != b {
		t.Fatalf("exclude a: %v %v", l, err)
	}
	// b is full; a is free but excluded: the retry waits for b.
	out := make(chan admitResult, 2)
	admitAsync(ctx, f, 0, &Request{Model: "m", Exclude: []*backend.Backend{a}}, out)
	waitFor(t, "the retry to queue", func() bool { return f.Waiting() == 1 })
	if a.InFlight() != 0 {
		t.Fatal("the retry took the backend it had tried")
	}
	// The same user's next request, queued behind its retry, may use a:
	// it takes a's free slot rather than idle behind the retry. a frees
	// again: still not for the retry while b may serve.
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second) // bounds a failure, not the pass
	defer cancel()
	la, err := f.Admit(lctx, &Request{Model: "m"})
	if err != nil || la.Backend() != a {
		t.Fatalf("the request behind the retry: %v %v", la, err)
	}
	la.Release()
	if f.Waiting() != 1 {
		t.Fatal("the waiter took the excluded backend")
	}
	l.Release()
	r := <-out
	if r.err != nil || r.l.Backend() != b {
		t.Fatalf("waiter: %+v", r)
	}
	r.l.Release()
	// b cannot serve (unhealthy): a, although tried, is the only candidate
	// left, and serves at once.
	set(b, false, testAdapter, "m")
	l2, err := f.Admit(ctx, &Request{Model: "m", Exclude: []*backend.Backend{a}})
	if err != nil || l2.Backend() != a {
		t.Fatalf("fallback to the only candidate: %v %v", l2, err)
	}
	l2.Release()
}

// Many goroutines (users, models, weights, cancellations) on real time:
// max_concurrent is never exceeded, every slot comes back, nothing stays
// queued. Run with -race for the locking.
func TestFair_Concurrent(t *testing.T) {
	caps := []int{2, 3}
	reg, bs := registry(t, caps...)
	set(bs[0], true, testAdapter, "m", "n")
	set(bs[1], true, testAdapter, "m")
	f := NewFair(FairOptions{Registry: reg, MaxWait: 5 * time.Second, Record: true})
	held := make([]atomic.Int64, len(bs))
	index := map[*backend.Backend]int{bs[0]: 0, bs[1]: 1}
	var over, admitted, gaveUp atomic.Int64
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			req := &Request{Model: "m", User: fmt.Sprint("u", g%5), Weight: float64(1 + g%3), Decision: &Decision{}}
			if g%4 == 0 {
				req.Model = "n"
			}
			for range 150 {
				req.EstTokens = rng.IntN(3000)
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if rng.IntN(4) == 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(300))*time.Microsecond)
				}
				l, err := f.Admit(ctx, req)
				cancel()
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
						t.Errorf("admit: %v", err)
						return
					}
					gaveUp.Add(1)
					continue
				}
				admitted.Add(1)
				i := index[l.Backend()]
				if n := held[i].Add(1); n > int64(caps[i]) {
					over.Add(1)
				}
				if rng.IntN(2) == 0 {
					time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
				}
				held[i].Add(-1)
				l.Release()
				if rng.IntN(3) == 0 {
					l.Release()
				}
			}
		}()
	}
	wg.Wait()
	if over.Load() != 0 {
		t.Fatalf("max_concurrent exceeded %d times", over.Load())
	}
	for _, b := range bs {
		if b.InFlight() != 0 {
			t.Fatalf("backend %s: %d in flight at the end", b.Name, b.InFlight())
		}
	}
	if n := f.Waiting(); n != 0 {
		t.Fatalf("%d still queued", n)
	}
	f.mu.Lock()
	handed := f.grants
	f.mu.Unlock()
	if handed == 0 {
		t.Fatal("no slot was ever handed to a waiter: the test did not queue")
	}
	t.Logf("admitted %d (%d handed over from the queue), gave up while waiting %d", admitted.Load(), handed, gaveUp.Load())
}

// Kick hands slots that appear without a release (a backend back up).
func TestFair_Kick(t *testing.T) {
	reg, bs := registry(t, 1, 1)
	set(bs[1], false, testAdapter, "m")
	f := NewFair(FairOptions{Registry: reg, MaxWait: time.Minute})
	held, _ := f.Admit(context.Background(), &Request{Model: "m"})
	out := make(chan admitResult, 1)
	admitAsync(context.Background(), f, 0, &Request{Model: "m"}, out)
	waitFor(t, "waiter", func() bool { return f.Waiting() == 1 })
	set(bs[1], true, testAdapter, "m")
	f.Kick()
	r := <-out
	if r.err != nil || r.l.Backend() != bs[1] {
		t.Fatalf("after Kick: %+v", r)
	}
	r.l.Release()
	held.Release()
}

func BenchmarkFair_FastPath(b *testing.B) {
	reg, _ := registry(b, 16, 16, 16, 16)
	f := NewFair(FairOptions{Registry: reg})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := &Request{Model: "m", User: "u"}
		for pb.Next() {
			l, err := f.Admit(ctx, req)
			if err != nil {
				b.Error(err)
				return
			}
			l.Release()
		}
	})
}

// One op: a release hands the slot to the best of 10,000 queued requests
// (1,000 users), and a new request joins the queue.
// With record, decisions are recorded (FairnessWait's bookkeeping runs).
func BenchmarkFair_EnqueueDispatch(b *testing.B) {
	for _, bc := range []struct {
		users  int
		record bool
	}{{1, false}, {1000, false}, {10000, false}, {1000, true}, {10000, true}} {
		users := bc.users
		b.Run(fmt.Sprintf("queued=10000/users=%d/record=%v", users, bc.record), func(b *testing.B) {
			s := newSim(b, FairOptions{Record: bc.record}, 1)
			rng := rand.New(rand.NewPCG(1, 1))
			reqs := make([]*Request, 10001)
			for i := range reqs {
				reqs[i] = &Request{Model: "m", User: fmt.Sprint("u", i%users), Weight: float64(1 + i%3), EstTokens: 100 + rng.IntN(2000)}
				if bc.record {
					reqs[i].Decision = &Decision{Candidates: make([]Candidate, 0, 1)}
				}
			}
			f := s.f
			var granted *waiter
			f.onGrant = func(w *waiter) { granted = w }
			f.mu.Lock()
			held, _, _ := f.try(reqs[0])
			for _, r := range reqs[1:] {
				f.try(r)
			}
			f.mu.Unlock()
			if f.Waiting() != 10000 {
				b.Fatalf("%d queued", f.Waiting())
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				held.Release() // dispatches one of the 10,000
				next := granted.req
				f.putWaiter(granted) // as Admit does
				f.mu.Lock()
				f.try(reqs[0]) // reqs[0] was the holder: it queues again
				f.mu.Unlock()
				held, reqs[0] = &next.lease, next
			}
		})
	}
}

// FairnessWait counts from the moment a request is passed over: a light
// request that arrived first waits while a heavier-weighted later one
// takes the freed slot (its cost needs more rounds of credit), and from
// then on its wait is fairness; a plain FIFO wait for capacity is none.
func TestFair_FairnessWait(t *testing.T) {
	reg, _ := registry(t, 1)
	c := &simClock{now: time.Unix(1e9, 0)}
	f := NewFair(FairOptions{Registry: reg, Record: true, BurstCredit: -1, Clock: c})
	submit := func(user string, weight float64, est int) *Request {
		t.Helper()
		r := &Request{Model: "m", User: user, Weight: weight, EstTokens: est, Decision: &Decision{}}
		f.mu.Lock()
		_, _, err := f.try(r)
		f.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	step := func() { c.now = c.now.Add(time.Second) }
	wait := func(r *Request) (queue, fairness time.Duration) {
		t.Helper()
		if !r.lease.held.Load() {
			t.Fatalf("%s's request not granted", r.User)
		}
		return time.Duration(r.Decision.QueueWait) * time.Microsecond, time.Duration(r.Decision.FairnessWait) * time.Microsecond
	}

	x := submit("x", 1, 1000) // holds the slot
	step()
	light := submit("light", 1, 3000) // eligible in 3 rounds
	step()
	heavy := submit("heavy", 3, 1000) // eligible in 1: goes first
	step()
	x.lease.Release() // heavy takes the slot: light is passed over now
	if q, fw := wait(heavy); q != time.Second || fw != 0 {
		t.Fatalf("heavy: queue %v fairness %v, want 1s and 0", q, fw)
	}
	step()
	step()
	heavy.lease.Release()
	if q, fw := wait(light); q != 4*time.Second || fw != 2*time.Second {
		t.Fatalf("light: queue %v fairness %v, want 4s and 2s (passed over 2s before its grant)", q, fw)
	}

	// One user queueing behind its own requests: capacity, not fairness.
	step()
	u1 := submit("u", 1, 1000)
	light.lease.Release() // u1 granted (nobody else waits)
	u2 := submit("u", 1, 1000)
	u3 := submit("u", 1, 1000)
	for i, r := range []*Request{u1, u2, u3} {
		step()
		if i > 0 {
			if q, fw := wait(r); q != time.Duration(i)*time.Second || fw != 0 {
				t.Fatalf("FIFO request %d: queue %v fairness %v, want %ds and 0", i+1, q, fw, i)
			}
		}
		r.lease.Release()
	}
}
