package quota

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// hang is how long any call may take while Redis is down: generous (the
// client's timeouts are 200 ms), it only catches hangs.
const hang = 2 * time.Second

func TestRedisDown_Modes(t *testing.T) {
	for _, tc := range []struct {
		mode Mode
		// admitted is how many of 10 requests in one minute, 2 at a time
		// at most in flight, get through with RPM 5 and 1 already used.
		admitted int
		kind     string // the denial seen
	}{
		{ModeLocal, 4, KindRequests},
		{ModeOpen, 10, ""},
		{ModeClosed, 0, KindUnavailable},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			r := testsvc.StartPrivateRedis(t) // stopped and restarted
			clk := newClock()
			var calls atomic.Int64
			c := redisClient(t, r)
			c.AddHook(countHook{&calls})
			l := New(Options{Redis: c, RedisDown: tc.mode, Now: clk.Now})
			lim := auth.Limits{RPM: 5, MaxConcurrent: 2, TokenBudget: 1000}
			p := principal(20, lim)
			ctx := context.Background()
			if err := spend(t, l, p, 100); err != nil { // fleet mode: leases taken
				t.Fatal(err)
			}
			r.Stop()
			admitted, kind := 0, ""
			var held *Ticket
			for i := range 10 {
				var tk *Ticket
				var err error
				timed(t, "Admit", hang, func() { tk, err = l.Admit(ctx, p) })
				if err != nil {
					kind = deniedKind(t, err)
					continue
				}
				admitted++
				timed(t, "Reserve", hang, func() { _, err = tk.Reserve(ctx, 10, 100) })
				if err != nil {
					t.Fatalf("request %d reserve: %v", i, err)
				}
				if held == nil {
					held = tk // one long request stays in flight
					continue
				}
				timed(t, "Done", hang, func() { tk.Done(100) })
				clk.Add(time.Second)
			}
			if admitted != tc.admitted || kind != tc.kind {
				t.Fatalf("admitted %d (denial %q); want %d (%q)", admitted, kind, tc.admitted, tc.kind)
			}
			if tc.mode == ModeLocal {
				// Concurrency still holds locally: held plus one more.
				a, err := l.Admit(ctx, principal(20, auth.Limits{MaxConcurrent: 2}))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := l.Admit(ctx, principal(20, auth.Limits{MaxConcurrent: 2})); deniedKind(t, err) != KindConcurrency {
					t.Fatalf("third in flight while down: %v", err)
				}
				a.Done(0)
			}
			// The breaker is open: requests stopped calling Redis.
			before := calls.Load()
			for range 20 {
				if tk, err := l.Admit(ctx, p); err == nil {
					tk.Done(0)
				}
			}
			if n := calls.Load() - before; n != 0 {
				t.Fatalf("%d Redis calls while the breaker is open", n)
			}
			timed(t, "tick while down", hang, func() { l.tick(ctx) })
			if l.fleet() {
				t.Fatal("fleet mode while Redis is down")
			}
			if held != nil {
				held.Done(100)
			}
			used := int64(100 * (admitted + 1))

			r.Restart()
			l.tick(ctx) // probe, reconcile
			if !l.fleet() {
				t.Fatal("fleet mode did not resume after Redis came back")
			}
			rep, err := l.Usage(ctx, 20, lim)
			if err != nil {
				t.Fatal(err)
			}
			// Redis lost everything with the restart: what it has now is
			// what this replica counted while it was away (no store: the
			// counters start at 0).
			if rep.LifetimeTokens != used || rep.TokensUsed != used {
				t.Fatalf("after reconcile %+v; want the %d tokens counted while down", rep, used)
			}
		})
	}
}

func TestRedisDown_UnresponsiveServerNeverHangs(t *testing.T) {
	// A server that accepts connections and never answers: every call
	// runs into the client's read timeout.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	l := New(Options{Redis: c})
	p := principal(21, auth.Limits{RPM: 100, TokenBudget: 1000, MaxConcurrent: 5})
	ctx := context.Background()
	for i := range 20 {
		timed(t, "request", hang, func() {
			if err := spend(t, l, p, 10); err != nil {
				t.Fatalf("request %d in local mode: %v", i, err)
			}
		})
	}
	timed(t, "tick", hang, func() { l.tick(ctx) })
	timed(t, "Usage", hang, func() { _, _ = l.Usage(ctx, 21, p.Limits) })
	timed(t, "Reset", hang, func() { _ = l.Reset(ctx, 21, p.Limits) })
	runCtx, cancel := context.WithCancel(ctx)
	cancel()
	timed(t, "Run's shutdown", hang, func() { l.Run(runCtx) })
}

func TestRedisDown_CancelledRequestKeepsBreakerClosed(t *testing.T) {
	_, _, ls := replicas(t, 1, Options{})
	l := ls[0]
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client went away before its request reached Redis
	_, _ = l.Admit(ctx, principal(22, auth.Limits{RPM: 10}))
	if !l.fleet() {
		t.Fatal("a cancelled request opened the breaker")
	}
	tk, err := l.Admit(context.Background(), principal(22, auth.Limits{RPM: 10}))
	if err != nil {
		t.Fatal(err)
	}
	tk.Done(0)
}
