package quota

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// replicas starts n Limiters on one Redis and a shared fake clock.
func replicas(t *testing.T, n int, o Options) (*testsvc.Redis, *clock, []*Limiter) {
	t.Helper()
	r := testsvc.StartRedis(t)
	clk := newClock()
	ls := make([]*Limiter, n)
	for i := range ls {
		oo := o
		oo.Redis = redisClient(t, r)
		oo.Now = clk.Now
		oo.Replica = string(rune('a' + i))
		ls[i] = New(oo)
	}
	return r, clk, ls
}

func TestFleet_RPMSlidingWindow(t *testing.T) {
	_, clk, ls := replicas(t, 2, Options{})
	const rpm = 60
	p := principal(10, auth.Limits{RPM: rpm})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	start := clk.Now()
	var admitted []time.Time
	const step = 50 * time.Millisecond
	// Four simulated minutes of light random demand, then four of demand
	// far above the limit, on both replicas.
	for i := 0; i < int(8*time.Minute/step); i++ {
		heavy := time.Duration(i)*step >= 4*time.Minute
		for _, l := range ls {
			if !heavy && rng.IntN(40) != 0 || heavy && rng.IntN(2) != 0 {
				continue
			}
			var tk *Ticket
			var err error
			timed(t, "Admit", 2*time.Second, func() { tk, err = l.Admit(ctx, p) })
			switch deniedKind(t, err) {
			case "":
				admitted = append(admitted, clk.Now())
				tk.Done(0)
			case KindRequests:
			default:
				t.Fatalf("unexpected denial %v", err)
			}
		}
		if i%5 == 0 {
			for _, l := range ls {
				l.tick(ctx)
			}
		}
		clk.Add(step)
	}
	// At most rpm admissions in every closed 60 s window.
	for i, at := range admitted {
		j, _ := slices.BinarySearchFunc(admitted, at.Add(-time.Minute), func(a, b time.Time) int { return a.Compare(b) })
		if n := i - j + 1; n > rpm {
			t.Fatalf("%d admitted in the 60 s ending %v", n, at.Sub(start))
		}
	}
	// Under saturating demand, windows get close to the limit.
	lo, sum, n := rpm, 0, 0
	for s := start.Add(5 * time.Minute); !s.After(start.Add(7 * time.Minute)); s = s.Add(time.Second) {
		c := 0
		for _, at := range admitted {
			if !at.Before(s) && !at.After(s.Add(time.Minute)) {
				c++
			}
		}
		lo, sum, n = min(lo, c), sum+c, n+1
	}
	t.Logf("saturated: admitted per 60 s window min %d, mean %.1f (limit %d); %d in total", lo, float64(sum)/float64(n), rpm, len(admitted))
	if lo < rpm*9/10 {
		t.Fatalf("saturated windows admitted as few as %d of %d", lo, rpm)
	}
}

func TestFleet_TokenBudget50Concurrent(t *testing.T) {
	_, _, ls := replicas(t, 2, Options{})
	const budget = 10_000
	lim := auth.Limits{TokenBudget: budget}
	p := principal(11, lim)
	ctx := context.Background()
	var charged, over atomic.Int64
	var wg sync.WaitGroup
	for w := range 50 {
		wg.Go(func() {
			l := ls[w%2]
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				tk, err := l.Admit(ctx, p)
				if err != nil {
					if deniedKind(t, err) != KindTokens {
						t.Errorf("admit: %v", err)
					}
					return
				}
				input := int64(20 + rng.IntN(80))
				g, err := tk.Reserve(ctx, input+1, input+200)
				if err != nil {
					tk.Done(0)
					if deniedKind(t, err) != KindTokens {
						t.Errorf("reserve: %v", err)
					}
					return
				}
				used := input + rng.Int64N(g-input+1)
				if rng.IntN(10) == 0 {
					// The input estimate was short by a few tokens.
					used = g + 3
					over.Add(3)
				}
				charged.Add(used)
				tk.Done(used)
			}
		})
	}
	wg.Wait()
	for _, l := range ls {
		l.tick(ctx)
	}
	total := charged.Load()
	t.Logf("charged %d of %d (overshoot from short estimates %d)", total, budget, over.Load())
	if total > budget+over.Load() {
		t.Fatalf("charged %d > budget %d + estimate overshoot %d", total, budget, over.Load())
	}
	if total < budget*95/100 {
		t.Fatalf("charged only %d of %d before every request was refused", total, budget)
	}
	r, err := ls[0].Usage(ctx, 11, lim)
	if err != nil {
		t.Fatal(err)
	}
	if r.TokensUsed != total || r.LifetimeTokens != total {
		t.Fatalf("redis counts used %d, lifetime %d; %d were charged", r.TokensUsed, r.LifetimeTokens, total)
	}
}

func TestFleet_ConcurrencyCapAcrossReplicas(t *testing.T) {
	_, clk, ls := replicas(t, 2, Options{})
	a, b := ls[0], ls[1]
	p := principal(12, auth.Limits{MaxConcurrent: 3})
	ctx := context.Background()
	var held []*Ticket
	for i, l := range []*Limiter{a, b, a} {
		tk, err := l.Admit(ctx, p)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		held = append(held, tk)
	}
	for _, l := range ls {
		if _, err := l.Admit(ctx, p); deniedKind(t, err) != KindConcurrency {
			t.Fatalf("fourth in flight: %v", err)
		}
	}
	held[0].Done(0)
	// a keeps the freed slot for a lease (its next request needs no round
	// trip), so b waits until a gives it back.
	if _, err := b.Admit(ctx, p); deniedKind(t, err) != KindConcurrency {
		t.Fatalf("b took a slot a still leases: %v", err)
	}
	clk.Add(time.Second)
	a.tick(ctx)
	tk, err := b.Admit(ctx, p)
	if err != nil {
		t.Fatalf("after a returned its free slot: %v", err)
	}
	tk.Done(0)
	for _, tk := range held[1:] {
		tk.Done(0)
	}
	r, err := a.Usage(ctx, 12, p.Limits)
	if err != nil {
		t.Fatal(err)
	}
	if r.InFlight > 3 {
		t.Fatalf("slots held %d > 3", r.InFlight)
	}
}

func TestFleet_DeadReplicaSlotsComeBack(t *testing.T) {
	_, clk, ls := replicas(t, 2, Options{})
	a, b := ls[0], ls[1]
	p := principal(13, auth.Limits{MaxConcurrent: 2})
	ctx := context.Background()
	for range 2 {
		if _, err := a.Admit(ctx, p); err != nil { // a dies holding both
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := b.Admit(ctx, p); deniedKind(t, err) != KindConcurrency {
			t.Fatalf("b admitted while a holds every slot: %v", err)
		}
		clk.Add(time.Second)
	}
	clk.Add(time.Second + time.Millisecond) // 3 leases since a's last refresh
	tk, err := b.Admit(ctx, p)
	if err != nil {
		t.Fatalf("a's slots did not expire: %v", err)
	}
	tk.Done(0)
}

func TestFleet_LiveReplicaKeepsSlotsBeyondTTL(t *testing.T) {
	_, clk, ls := replicas(t, 2, Options{})
	a, b := ls[0], ls[1]
	p := principal(14, auth.Limits{MaxConcurrent: 1})
	ctx := context.Background()
	tk, err := a.Admit(ctx, p) // a long stream
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		clk.Add(500 * time.Millisecond)
		a.tick(ctx)
		if _, err := b.Admit(ctx, p); deniedKind(t, err) != KindConcurrency {
			t.Fatalf("b admitted while a's stream runs: %v", err)
		}
	}
	tk.Done(0)
}

func TestFleet_LeaseGoesBack(t *testing.T) {
	_, clk, ls := replicas(t, 2, Options{})
	a, b := ls[0], ls[1]
	lim := auth.Limits{TokenBudget: 10_000, RPM: 100}
	p := principal(15, lim)
	ctx := context.Background()
	// A steady rate on a makes it lease permits and tokens in batches.
	for range 40 {
		tk, err := a.Admit(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tk.Reserve(ctx, 10, 100); err != nil {
			t.Fatal(err)
		}
		tk.Done(50)
		clk.Add(10 * time.Millisecond)
	}
	u := a.peek(15)
	permits, free := u.permits, u.free
	u.mu.Unlock()
	if permits < 2 || free < 100 {
		t.Fatalf("a holds %d permits and %d free tokens; want batches", permits, free)
	}
	clk.Add(time.Second)
	a.tick(ctx)
	tk, err := b.Admit(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := tk.Reserve(ctx, 1, 8000); err != nil || g != 8000 {
		t.Fatalf("b got %d, %v of the 8000 left after a returned its lease", g, err)
	}
	tk.Done(8000)
	r, err := b.Usage(ctx, 15, lim)
	if err != nil {
		t.Fatal(err)
	}
	// b settled its 8000 in memory; a's 2000 are in Redis.
	if r.TokensUsed != 2000 || r.RequestsLastMinute != 41 {
		t.Fatalf("usage %+v; want 2000 used, 41 permits counted", r)
	}
}

func TestFleet_CommonPathNoRoundTrip(t *testing.T) {
	_, clk, ls := replicas(t, 1, Options{})
	l := ls[0]
	var calls atomic.Int64
	l.rdb.AddHook(countHook{&calls})
	p := principal(16, auth.Limits{TokenBudget: 1 << 40, RPM: 1 << 20, MaxConcurrent: 100})
	ctx := context.Background()
	for range 1000 {
		tk, err := l.Admit(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tk.Reserve(ctx, 100, 1000); err != nil {
			t.Fatal(err)
		}
		tk.Done(500)
		clk.Add(100 * time.Microsecond)
	}
	if n := calls.Load(); n > 30 {
		t.Fatalf("%d Redis round trips for 1000 requests within one lease", n)
	}
	t.Logf("%d Redis round trips for 1000 requests", calls.Load())
}

type countHook struct{ n *atomic.Int64 }

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// scriptHook counts round trips that run scripts (a new connection's
// handshake is not one).
type scriptHook struct{ n *atomic.Int64 }

func isScript(c redis.Cmder) bool { return strings.HasPrefix(c.Name(), "eval") }

func (scriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h scriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isScript(cmd) {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h scriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, isScript) {
			h.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

func TestFleet_PeriodRollover(t *testing.T) {
	r := testsvc.StartRedis(t)
	testRollover(t, func(clk *clock) *Limiter {
		return New(Options{Now: clk.Now, Redis: redisClient(t, r)})
	})
}

func TestFleet_Reset(t *testing.T) {
	r := testsvc.StartRedis(t)
	testReset(t, func(clk *clock) *Limiter {
		return New(Options{Now: clk.Now, Redis: redisClient(t, r), Store: newMemStore()})
	})
}

func TestFleet_ResetReachesOtherReplicas(t *testing.T) {
	_, clk, ls := replicas(t, 2, Options{})
	a, b := ls[0], ls[1]
	lim := auth.Limits{TokenBudget: 1000}
	p := principal(17, lim)
	ctx := context.Background()
	if err := spend(t, b, p, 1000); err != nil {
		t.Fatal(err)
	}
	b.tick(ctx)
	for _, l := range ls {
		if err := spend(t, l, p, 1); deniedKind(t, err) != KindTokens {
			t.Fatalf("spent budget: %v", err)
		}
	}
	if err := a.Reset(ctx, 17, lim); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second) // b looks again at most once a lease
	if err := spend(t, b, p, 1000); err != nil {
		t.Fatalf("b after a reset on a: %v", err)
	}
	b.tick(ctx)
	r, err := a.Usage(ctx, 17, lim)
	if err != nil {
		t.Fatal(err)
	}
	if r.TokensUsed != 1000 || r.LifetimeTokens != 2000 {
		t.Fatalf("usage %+v; want 1000 used, 2000 lifetime", r)
	}
}

func TestFleet_ConcurrencyCapUnderLoad(t *testing.T) {
	_, clk, ls := replicas(t, 2, Options{Lease: 200 * time.Millisecond})
	const maxc = 4
	p := principal(18, auth.Limits{MaxConcurrent: maxc, RPM: 1 << 20, TokenBudget: 1 << 40})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var bg sync.WaitGroup
	bg.Go(func() { // time passes and both replicas do their background work
		for ctx.Err() == nil {
			clk.Add(20 * time.Millisecond)
			for _, l := range ls {
				l.tick(ctx)
			}
			time.Sleep(time.Millisecond)
		}
	})
	var inFlight, peak, admitted atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			l := ls[w%2]
			for range 150 {
				tk, err := l.Admit(ctx, p)
				if err != nil {
					if k := deniedKind(t, err); k != KindConcurrency {
						t.Errorf("denied %q", k)
					}
					continue
				}
				n := inFlight.Add(1)
				for {
					old := peak.Load()
					if n <= old || peak.CompareAndSwap(old, n) {
						break
					}
				}
				admitted.Add(1)
				if _, err := tk.Reserve(ctx, 10, 100); err != nil {
					t.Errorf("reserve: %v", err)
				}
				inFlight.Add(-1)
				tk.Done(50)
			}
		})
	}
	wg.Wait()
	cancel()
	bg.Wait()
	t.Logf("admitted %d of %d; peak in flight %d (limit %d)", admitted.Load(), 16*150, peak.Load(), maxc)
	if peak.Load() > maxc {
		t.Fatalf("%d requests in flight at once, limit %d", peak.Load(), maxc)
	}
	if admitted.Load() == 0 {
		t.Fatal("nothing admitted")
	}
}

func TestFleet_DeniedRetryAfterAndStatus(t *testing.T) {
	_, clk, ls := replicas(t, 1, Options{})
	l := ls[0]
	lim := auth.Limits{RPM: 2, TokenBudget: 500, BudgetPeriod: time.Hour, PeriodAnchor: newClock().Now()}
	p := principal(19, lim)
	ctx := context.Background()
	for i := range 2 {
		tk, err := l.Admit(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tk.Reserve(ctx, 100, 100); err != nil {
			t.Fatal(err)
		}
		st := tk.Status()
		if st.LimitRequests != 2 || st.RemainingRequests != 1-i || st.LimitTokens != 500 ||
			st.RemainingTokens != 400-100*int64(i) || st.ResetTokens != time.Hour-time.Duration(i)*10*time.Second {
			t.Fatalf("request %d status %+v", i, st)
		}
		tk.Done(100)
		clk.Add(10 * time.Second)
	}
	_, err := l.Admit(ctx, p)
	var d *Denied
	if deniedKind(t, err) != KindRequests || !errors.As(err, &d) {
		t.Fatalf("third request: %v", err)
	}
	// The first grant (20 s ago) stops counting after 60 s + the lease.
	if d.RetryAfter != 42*time.Second || d.Status.RemainingRequests != 0 || d.Msg == "" {
		t.Fatalf("denial %+v; want Retry-After 42s", d)
	}
}

func TestFleet_ExpiredLeaseIsNotSpent(t *testing.T) {
	_, clk, ls := replicas(t, 2, Options{})
	a, b := ls[0], ls[1]
	lim := auth.Limits{TokenBudget: 1000}
	p := principal(23, lim)
	for range 3 { // a's rate makes it lease ahead
		if err := spend(t, a, p, 50); err != nil {
			t.Fatal(err)
		}
		clk.Add(100 * time.Millisecond)
	}
	u := a.peek(23)
	free := u.free
	u.mu.Unlock()
	if free == 0 {
		t.Fatal("a leased nothing ahead")
	}
	// a's Run stalls: Redis forgets its lease after 3
	// leases, and b takes everything left.
	clk.Add(3*time.Second + time.Millisecond)
	if err := spend(t, b, p, 850); err != nil {
		t.Fatalf("b: %v", err)
	}
	if err := spend(t, a, p, 1); deniedKind(t, err) != KindTokens {
		t.Fatalf("a spent a lease Redis no longer counts: %v", err)
	}
}

func TestFleet_MaintenanceIsPipelined(t *testing.T) {
	_, clk, ls := replicas(t, 2, Options{})
	a, b := ls[0], ls[1]
	var calls atomic.Int64
	a.rdb.AddHook(scriptHook{&calls})
	const users = 300
	lim := auth.Limits{MaxConcurrent: 1, TokenBudget: 1000}
	ctx := context.Background()
	for id := range int64(users) {
		if err := spend(t, a, principal(1000+id, lim), 10); err != nil {
			t.Fatal(err)
		}
	}
	if err := spend(t, b, principal(1000, lim), 0); deniedKind(t, err) != KindConcurrency {
		t.Fatalf("b took a slot a keeps: %v", err)
	}
	clk.Add(time.Second)
	before := calls.Load()
	a.tick(ctx) // every user's free slot and lease back, charges pushed
	if n := calls.Load() - before; n != (users+maintainChunk-1)/maintainChunk {
		t.Fatalf("maintenance of %d users took %d round trips; want one per %d", users, n, maintainChunk)
	}
	for id := range int64(users) {
		if err := spend(t, b, principal(1000+id, lim), 990); err != nil {
			t.Fatalf("user %d on b: %v", id, err)
		}
	}
	b.tick(ctx)
	r, err := a.Usage(ctx, 1000+users-1, lim)
	if err != nil {
		t.Fatal(err)
	}
	if r.TokensUsed != 1000 {
		t.Fatalf("usage %+v; want a's 10 and b's 990", r)
	}
}

// lostReplies makes the next n token-script calls run in Redis but fail
// at the caller, as a call whose reply is lost to a timeout does.
type lostReplies struct{ n *atomic.Int64 }

var errLostReply = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}

// isTokenScript reports a tokenScript call: EVALSHA with its hash, or
// EVAL with its source (Script.Run's fallback after NOSCRIPT).
func isTokenScript(c redis.Cmder) bool {
	a := c.Args()
	if len(a) < 2 || !isScript(c) {
		return false
	}
	s, _ := a[1].(string)
	return s == tokenScript.Hash() || fmt.Sprintf("%x", sha1.Sum([]byte(s))) == tokenScript.Hash()
}

func (h lostReplies) lose(cmds ...redis.Cmder) error {
	var err error
	for _, c := range cmds {
		if c.Err() == nil && isTokenScript(c) && h.n.Add(-1) >= 0 {
			c.SetErr(errLostReply)
			err = errLostReply
		}
	}
	return err
}

func (lostReplies) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h lostReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := next(ctx, cmd); err != nil {
			return err
		}
		return h.lose(cmd)
	}
}
func (h lostReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := next(ctx, cmds); err != nil {
			return err
		}
		return h.lose(cmds...)
	}
}

// TestFleet_LostReplyChargesOnce: a token-script call that ran in Redis
// but whose reply was lost leaves its charges pending; sending them again
// (after the breaker closes) must not charge them twice.
func TestFleet_LostReplyChargesOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		// lost runs the request or upkeep whose token call loses its reply.
		lost func(t *testing.T, l *Limiter, p *auth.Principal)
		want int64 // tokens used in all
	}{
		{"maintenance push", func(t *testing.T, l *Limiter, p *auth.Principal) {
			l.tick(context.Background())
		}, 150},
		{"lease fetch", func(t *testing.T, l *Limiter, p *auth.Principal) {
			if err := spend(t, l, p, 500); err != nil { // needs more lease: a fetch, which pushes the 50
				t.Fatal(err)
			}
		}, 650},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testsvc.StartRedis(t)
			clk := newClock()
			c := redisClient(t, r)
			var n atomic.Int64
			c.AddHook(lostReplies{&n})
			l := New(Options{Redis: c, Now: clk.Now, Replica: "a"})
			lim := auth.Limits{TokenBudget: 100_000, BudgetPeriod: time.Hour, PeriodAnchor: clk.Now()}
			p := principal(int64(7100+len(tc.name)), lim)
			ctx := context.Background()
			if err := spend(t, l, p, 100); err != nil {
				t.Fatal(err)
			}
			l.tick(ctx)                                // pushed
			if err := spend(t, l, p, 50); err != nil { // pending
				t.Fatal(err)
			}
			n.Store(1)
			tc.lost(t, l, p)
			if n.Load() >= 1 {
				t.Fatal("no token call lost its reply")
			}
			if l.fleet() {
				t.Fatal("a failed Redis call left the breaker closed")
			}
			for range 2 { // the probe reconciles; then upkeep
				clk.Add(100 * time.Millisecond)
				l.tick(ctx)
			}
			if !l.fleet() {
				t.Fatal("the breaker did not close again")
			}
			rep, err := l.Usage(ctx, p.UserID, lim)
			if err != nil {
				t.Fatal(err)
			}
			if rep.TokensUsed != tc.want || rep.LifetimeTokens != tc.want {
				t.Fatalf("usage %+v; want %d used and lifetime (each charge once)", rep, tc.want)
			}
		})
	}
}

// TestTokenScript_StaleCallAppliesNothing: a call delayed past a later
// one (its reply lost, sent again with more charges) applies only what
// the later one did not, in either order.
func TestTokenScript_StaleCallAppliesNothing(t *testing.T) {
	r := testsvc.StartRedis(t)
	c := redisClient(t, r)
	ctx := context.Background()
	run := func(key string, charge, sent int64) int64 {
		t.Helper()
		keys := []string{key, key + ":life", key + ":lifeack"}
		res, err := tokenScript.Run(ctx, c, keys, 1, "a", 0, charge, charge, 0, 0, 0, 0, 1000, 60_000, 0, 0, sent, sent).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		if res[1] != res[3] {
			t.Fatalf("used %d, lifetime %d: they got the same charges", res[1], res[3])
		}
		return res[1]
	}
	// The first call (100 sent in all) is late: the retry carries its
	// 100 and 50 more.
	if got := run("mr:q:{7200}:t:late", 150, 150); got != 150 {
		t.Fatalf("retry: used %d, want 150", got)
	}
	if got := run("mr:q:{7200}:t:late", 100, 100); got != 150 {
		t.Fatalf("the late call after its retry: used %d, want 150", got)
	}
	// In order: the first call ran, its retry adds only the 50.
	if got := run("mr:q:{7201}:t:order", 100, 100); got != 100 {
		t.Fatalf("first call: used %d, want 100", got)
	}
	if got := run("mr:q:{7201}:t:order", 150, 150); got != 150 {
		t.Fatalf("retry after the first call ran: used %d, want 150", got)
	}
}
