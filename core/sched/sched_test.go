package sched

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

var testAdapter = pluginhost.NewNativePlugin("vllm", func() *sdk.Plugin {
	return sdk.NewAdapter(sdk.Manifest{Name: "vllm", Format: "vllm"}, sdk.Unimplemented{})
})

// registry builds backends named after caps' keys order (a, b, c...) with
// the given max_concurrent, all healthy, with an adapter, serving "m".
func registry(t testing.TB, caps ...int) (*backend.Registry, []*backend.Backend) {
	t.Helper()
	y := "backends:\n"
	for i, c := range caps {
		y += fmt.Sprintf("  - {name: %c, engine: vllm, url: \"http://127.0.0.1:%d\", max_concurrent: %d}\n", 'a'+i, i+1, c)
	}
	cfg, err := config.Parse([]byte(y), ".")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := backend.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range reg.Backends() {
		set(b, true, testAdapter, "m")
	}
	return reg, reg.Backends()
}

func set(b *backend.Backend, healthy bool, ad *pluginhost.Plugin, models ...string) {
	st := &backend.Status{Healthy: healthy, Probed: true, Models: map[string]canon.DiscoveredModel{}}
	for _, m := range models {
		st.Models[m] = canon.DiscoveredModel{Name: m}
	}
	b.SetStatus(st, ad)
}

func apiErr(t *testing.T, err error, status int, code string) *apierr.Error {
	t.Helper()
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Status != status || ae.Code != code {
		t.Fatalf("error = %v (%+v), want %d %s", err, ae, status, code)
	}
	return ae
}

func TestLeastLoaded_FastPath(t *testing.T) {
	reg, bs := registry(t, 2, 4)
	a, b := bs[0], bs[1]
	s := NewLeastLoaded(reg, time.Second)
	r1 := &Request{Model: "m"}
	l1, err := s.Admit(context.Background(), r1)
	if err != nil || l1.Backend() != a {
		t.Fatalf("first: %v %v", l1, err)
	}
	// a holds 1 of 2, b 0 of 4: b is less loaded.
	r2 := &Request{Model: "m"}
	l2, err := s.Admit(context.Background(), r2)
	if err != nil || l2.Backend() != b {
		t.Fatalf("second: %v %v", l2, err)
	}
	if a.InFlight() != 1 || b.InFlight() != 1 {
		t.Fatalf("in flight %d %d", a.InFlight(), b.InFlight())
	}
	l1.Release()
	l2.Release()
	if a.InFlight() != 0 || b.InFlight() != 0 {
		t.Fatalf("after release: %d %d", a.InFlight(), b.InFlight())
	}
}

func TestLeastLoaded_Errors(t *testing.T) {
	reg, bs := registry(t, 1, 1)
	a, b := bs[0], bs[1]
	s := NewLeastLoaded(reg, 20*time.Millisecond)
	ctx := context.Background()

	_, err := s.Admit(ctx, &Request{Model: "nope"})
	apiErr(t, err, 404, "model_not_found")

	// Known model, every backend down (the last known list is kept).
	set(a, false, testAdapter, "m")
	set(b, true, nil, "m") // healthy but no adapter
	_, err = s.Admit(ctx, &Request{Model: "m"})
	if e := apiErr(t, err, 503, "backend_unavailable"); e.RetryAfter != RetryAfterUnavailable {
		t.Fatalf("RetryAfter = %d", e.RetryAfter)
	}
	if a.InFlight() != 0 || b.InFlight() != 0 {
		t.Fatal("an error held a slot")
	}

	// Full: the queue wait runs out.
	set(a, true, testAdapter, "m")
	set(b, false, testAdapter, "m")
	hold := &Request{Model: "m"}
	l, err := s.Admit(ctx, hold)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = s.Admit(ctx, &Request{Model: "m"})
	e := apiErr(t, err, 503, "backend_busy")
	if e.RetryAfter != RetryAfterBusy || !errors.Is(err, backend.ErrQueueTimeout) {
		t.Fatalf("busy: %+v", e)
	}
	if d := time.Since(start); d < 20*time.Millisecond || d > 2*time.Second {
		t.Fatalf("waited %v for a 20ms queue wait", d)
	}
	if a.InFlight() != 1 {
		t.Fatalf("in flight %d", a.InFlight())
	}

	// A ctx deadline shorter than the queue wait reads as busy too.
	s2 := NewLeastLoaded(reg, time.Minute)
	dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = s2.Admit(dctx, &Request{Model: "m"})
	apiErr(t, err, 503, "backend_busy")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}

	// No queue wait at all: busy at once.
	_, err = NewLeastLoaded(reg, 0).Admit(ctx, &Request{Model: "m"})
	apiErr(t, err, 503, "backend_busy")
	l.Release()
}

func TestLeastLoaded_WaitsForARelease(t *testing.T) {
	reg, bs := registry(t, 1)
	s := NewLeastLoaded(reg, 10*time.Second)
	l1, err := s.Admit(context.Background(), &Request{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		l   Lease
		err error
	}
	done := make(chan res, 1)
	go func() {
		l, err := s.Admit(context.Background(), &Request{Model: "m"})
		done <- res{l, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("admitted while full: %v", r.err)
	case <-time.After(30 * time.Millisecond):
	}
	l1.Release()
	select {
	case r := <-done:
		if r.err != nil || r.l.Backend() != bs[0] {
			t.Fatalf("after release: %v", r.err)
		}
		r.l.Release()
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not admitted after a release")
	}
	if bs[0].InFlight() != 0 {
		t.Fatalf("in flight %d", bs[0].InFlight())
	}
}

func TestLeastLoaded_CancelWhileWaiting(t *testing.T) {
	reg, bs := registry(t, 1)
	s := NewLeastLoaded(reg, time.Minute)
	l1, err := s.Admit(context.Background(), &Request{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req := &Request{Model: "m"}
	done := make(chan error, 1)
	go func() {
		l, err := s.Admit(ctx, req)
		if l != nil {
			err = errors.New("got a lease")
		}
		done <- err
	}()
	waitFor(t, "the request waiting for the slot", func() bool { return bs[0].Waiting() == 1 })
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		apiErr(t, err, 503, "request_cancelled")
		if d := time.Since(start); d > time.Second {
			t.Fatalf("returned %v after the cancel", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Admit did not return after the cancel")
	}
	if bs[0].InFlight() != 1 {
		t.Fatalf("in flight %d, want only l1's", bs[0].InFlight())
	}
	l1.Release()
	if bs[0].InFlight() != 0 {
		t.Fatalf("in flight %d after l1's release", bs[0].InFlight())
	}
	// The cancelled request holds nothing: it may be admitted again, and an
	// already cancelled ctx is refused at once.
	if _, err := s.Admit(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	l, err := s.Admit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
}

func TestLeastLoaded_Exclude(t *testing.T) {
	reg, bs := registry(t, 4, 4, 4)
	a, b, c := bs[0], bs[1], bs[2]
	s := NewLeastLoaded(reg, 0)
	ctx := context.Background()
	// Load b so that, unexcluded, a would win.
	hold := &Request{Model: "m", Exclude: []*backend.Backend{a, c}}
	lb, err := s.Admit(ctx, hold)
	if err != nil || lb.Backend() != b {
		t.Fatalf("exclude a, c: %v %v", lb, err)
	}
	req := &Request{Model: "m", Exclude: []*backend.Backend{a}}
	l, err := s.Admit(ctx, req)
	if err != nil || l.Backend() != c {
		t.Fatalf("exclude a: got %v, %v; want c", l.Backend().Name, err)
	}
	l.Release()
	// The retry pattern: release, exclude, admit the same request again.
	req = &Request{Model: "m"}
	l, err = s.Admit(ctx, req)
	if err != nil || l.Backend() != a {
		t.Fatalf("no exclusion: %v %v", l, err)
	}
	l.Release()
	req.Exclude = append(req.Exclude, l.Backend())
	l2, err := s.Admit(ctx, req)
	if err != nil || l2.Backend() != c {
		t.Fatalf("retry: %v %v", l2.Backend().Name, err)
	}
	l2.Release()
	// Every candidate excluded: fall back to an excluded one.
	req = &Request{Model: "m", Exclude: []*backend.Backend{a, b, c}}
	if l, err = s.Admit(ctx, req); err != nil || l.Backend() != a {
		t.Fatalf("all excluded: %v %v", l, err)
	}
	l.Release()
	// The only other candidate is down: the excluded one serves.
	set(b, false, testAdapter, "m")
	set(c, false, testAdapter, "m")
	req = &Request{Model: "m", Exclude: []*backend.Backend{a}}
	if l, err = s.Admit(ctx, req); err != nil || l.Backend() != a {
		t.Fatalf("others down: %v %v", l, err)
	}
	l.Release()
	lb.Release()
}

func TestLease_ReleaseIdempotent(t *testing.T) {
	reg, bs := registry(t, 2)
	s := NewLeastLoaded(reg, 0)
	req := &Request{Model: "m"}
	l, err := s.Admit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admit(context.Background(), req); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("admit while held: %v", err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); l.Release() }()
	}
	wg.Wait()
	l.Release()
	if bs[0].InFlight() != 0 {
		t.Fatalf("in flight %d", bs[0].InFlight())
	}
	// Capacity is intact: exactly two slots.
	r1, r2, r3 := &Request{Model: "m"}, &Request{Model: "m"}, &Request{Model: "m"}
	l1, err1 := s.Admit(context.Background(), r1)
	l2, err2 := s.Admit(context.Background(), r2)
	_, err3 := s.Admit(context.Background(), r3)
	if err1 != nil || err2 != nil || err3 == nil {
		t.Fatalf("capacity: %v %v %v", err1, err2, err3)
	}
	l1.Release()
	l2.Release()
}

// Many goroutines admitting, some cancelling while they wait: no backend
// ever exceeds max_concurrent and every slot comes back.
func TestLeastLoaded_Concurrent(t *testing.T) {
	caps := []int{3, 5, 2}
	reg, bs := registry(t, caps...)
	s := NewLeastLoaded(reg, 5*time.Second)
	held := make([]atomic.Int64, len(bs))
	index := map[*backend.Backend]int{}
	for i, b := range bs {
		index[b] = i
	}
	var over atomic.Int64
	var admitted, cancelled atomic.Int64
	var wg sync.WaitGroup
	for g := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			req := &Request{Model: "m"}
			for range 200 {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if rng.IntN(4) == 0 {
					ctx, cancel = context.WithTimeout(context.Background(), time.Duration(rng.IntN(200))*time.Microsecond)
				}
				l, err := s.Admit(ctx, req)
				cancel()
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
						t.Errorf("admit: %v", err)
						return
					}
					cancelled.Add(1)
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
	t.Logf("admitted %d, cancelled while waiting %d", admitted.Load(), cancelled.Load())
}

func BenchmarkLeastLoaded_Admit(b *testing.B) {
	reg, _ := registry(b, 16, 16, 16, 16)
	s := NewLeastLoaded(reg, time.Second)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := &Request{Model: "m"}
		for pb.Next() {
			l, err := s.Admit(ctx, req)
			if err != nil {
				b.Error(err)
				return
			}
			l.Release()
		}
	})
}
