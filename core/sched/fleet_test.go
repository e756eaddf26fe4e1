package sched

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testsvc.StopAll()
	os.Exit(code)
}

// replica is one gateway's scheduler in a fleet test: its own registry
// (a backend "a" of the given capacity), Fair and Fleet.
type replica struct {
	f    *Fair
	fl   *Fleet
	b    *backend.Backend
	stop context.CancelFunc
	done chan struct{}
}

func redisClient(t testing.TB, r *testsvc.Redis) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr, DB: r.DB, DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond,
		WriteTimeout: 200 * time.Millisecond, PoolTimeout: 200 * time.Millisecond, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// startReplica starts a replica named name; fo's Redis must be set.
func startReplica(t testing.TB, name string, capacity int, fo FleetOptions, o FairOptions) *replica {
	t.Helper()
	reg, bs := registry(t, capacity)
	fo.Replica = name
	if fo.Log == nil {
		fo.Log = slog.New(slog.DiscardHandler)
	}
	r := &replica{fl: NewFleet(fo), b: bs[0], done: make(chan struct{})}
	o.Registry, o.Fleet = reg, r.fl
	r.f = NewFair(o)
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { defer close(r.done); r.fl.Run(ctx) }()
	t.Cleanup(r.kill)
	return r
}

// kill stops the replica's loop: idle slots go back, slots in use stay
// leased until they expire, as a replica that died with requests open.
func (r *replica) kill() {
	r.stop()
	<-r.done
}

func slotCount(t testing.TB, c *redis.Client, backend string) int64 {
	t.Helper()
	n, err := c.ZCard(context.Background(), DefaultFleetPrefix+"{"+backend+"}:slots").Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Slots are leased in Redis when used, renewed while held (past their
// lease time), given back after the grace when idle, and a dead
// replica's slots in use come back only after their lease expired.
func TestFleet_AcquireReleaseRenewExpiry(t *testing.T) {
	rd := testsvc.StartRedis(t)
	c := redisClient(t, rd)
	const lease = 900 * time.Millisecond
	fo := FleetOptions{Redis: c, SlotLease: lease, Grace: 100 * time.Millisecond}
	a := startReplica(t, "A", 2, fo, FairOptions{MaxWait: 10 * time.Second})
	ctx := context.Background()
	var reqs [2]Request
	for i := range reqs {
		reqs[i] = Request{Model: "m", User: "u"}
		if _, err := a.f.Admit(ctx, &reqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if n := slotCount(t, c, "a"); n != 2 {
		t.Fatalf("%d slots leased in redis, want 2", n)
	}
	time.Sleep(2 * lease) // renewed meanwhile, or they would have expired
	if n := slotCount(t, c, "a"); n != 2 {
		t.Fatalf("after two lease times held: %d slots in redis, want 2", n)
	}
	reqs[0].lease.Release()
	waitFor(t, "the idle slot to go back after the grace", func() bool { return slotCount(t, c, "a") == 1 })
	if held, inUse := a.fl.Held(a.b); held != 1 || inUse != 1 {
		t.Fatalf("held %d in use %d, want 1 and 1", held, inUse)
	}

	// A dies holding one slot in use; B, with capacity 2, gets one at once
	// (the free one) and the second only once A's lease expired.
	a.kill()
	b := startReplica(t, "B", 2, fo, FairOptions{MaxWait: 10 * time.Second})
	var r1, r2 Request
	r1, r2 = Request{Model: "m", User: "v"}, Request{Model: "m", User: "v"}
	if _, err := b.f.Admit(ctx, &r1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := b.f.Admit(ctx, &r2); err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	if waited > lease+3*time.Second {
		t.Fatalf("the dead replica's slot came back after %v, lease %v", waited, lease)
	}
	if n := slotCount(t, c, "a"); n != 2 {
		t.Fatalf("%d slots in redis, want 2 (B's)", n)
	}
	t.Logf("the dead replica's slot came back after %v (lease %v)", waited, lease)
	r1.lease.Release()
	r2.lease.Release()
}

// Replicas sharing a backend never hold more of its slots than its
// max_concurrent, however their requests interleave, and every request
// is served.
func TestFleet_CapAcrossReplicas(t *testing.T) {
	rd := testsvc.StartRedis(t)
	const capacity, replicas, clients, rounds = 4, 3, 8, 25
	var rs []*replica
	for i := range replicas {
		fo := FleetOptions{Redis: redisClient(t, rd), Grace: 20 * time.Millisecond}
		rs = append(rs, startReplica(t, fmt.Sprint("r", i), capacity, fo, FairOptions{MaxWait: 30 * time.Second}))
	}
	var inUse, peak, served atomic.Int64
	var wg sync.WaitGroup
	for i := range replicas * clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rs[i%replicas]
			req := &Request{Model: "m", User: fmt.Sprint("u", i%5)}
			for range rounds {
				l, err := r.f.Admit(context.Background(), req)
				if err != nil {
					t.Error(err)
					return
				}
				n := inUse.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(time.Millisecond)
				inUse.Add(-1)
				l.Release()
				served.Add(1)
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > capacity {
		t.Fatalf("%d requests held a slot at once across %d replicas, max_concurrent %d", p, replicas, capacity)
	}
	if n := served.Load(); n != replicas*clients*rounds {
		t.Fatalf("%d served, want %d", n, replicas*clients*rounds)
	}
	var claims int64
	for _, r := range rs {
		claims += r.fl.Stats().Claims
	}
	t.Logf("peak %d of %d; %d requests, %d claim round trips", peak.Load(), capacity, served.Load(), claims)
}

// A slot freed while two other replicas wait goes to the one whose best
// waiter has the lower fleet-wide key: the light user, not the heavy one.
func TestFleet_FreedSlotGoesToLowestBid(t *testing.T) {
	rd := testsvc.StartRedis(t)
	c := redisClient(t, rd)
	fo := FleetOptions{Redis: c, Grace: time.Minute}
	x := startReplica(t, "X", 1, fo, FairOptions{MaxWait: 30 * time.Second})
	heavy := startReplica(t, "H", 1, fo, FairOptions{MaxWait: 30 * time.Second})
	light := startReplica(t, "L", 1, fo, FairOptions{MaxWait: 30 * time.Second})
	heavy.fl.charge("heavy", 1e6)
	ctx := context.Background()
	hold := &Request{Model: "m", User: "x"}
	if _, err := x.f.Admit(ctx, hold); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 2)
	admit := func(r *replica, user string) *Request {
		req := &Request{Model: "m", User: user}
		go func() {
			if _, err := r.f.Admit(ctx, req); err != nil {
				t.Error(err)
			}
			got <- user
		}()
		return req
	}
	hr := admit(heavy, "heavy")
	waitFor(t, "the heavy user's bid", func() bool { return bidCount(t, c) == 1 })
	lr := admit(light, "light")
	waitFor(t, "both bids", func() bool { return bidCount(t, c) == 2 })
	hold.lease.Release()
	if first := <-got; first != "light" {
		t.Fatalf("the freed slot went to %s", first)
	}
	lr.lease.Release()
	if second := <-got; second != "heavy" {
		t.Fatalf("then to %s", second)
	}
	hr.lease.Release()
}

func bidCount(t testing.TB, c *redis.Client) int64 {
	n, err := c.ZCard(context.Background(), DefaultFleetPrefix+"{a}:bids").Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Users of weights 3:1 whose requests go through different replicas get
// 3:1 of a saturated backend, within ±5 %: with 10 ms requests, and with
// 2 ms ones, as short as a slot's handover between replicas.
func TestFleet_WeightedSharesAcrossReplicas(t *testing.T) {
	for _, d := range []time.Duration{10 * time.Millisecond, 2 * time.Millisecond} {
		t.Run(fmt.Sprint("req=", d), func(t *testing.T) { fleetShares(t, d) })
	}
}

func fleetShares(t *testing.T, dur time.Duration) {
	rd := testsvc.StartRedis(t)
	const capacity, clients, warmup, total = 4, 8, 100, 700
	mk := func(name string) *replica {
		fo := FleetOptions{Redis: redisClient(t, rd)}
		return startReplica(t, name, capacity, fo, FairOptions{MaxWait: 30 * time.Second})
	}
	r1, r2 := mk("r1"), mk("r2")
	var mu sync.Mutex
	counts := map[string]int{}
	n := 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	run := func(r *replica, user string, weight float64) {
		defer wg.Done()
		req := &Request{Model: "m", User: user, Weight: weight}
		for ctx.Err() == nil {
			l, err := r.f.Admit(ctx, req)
			if err != nil {
				return
			}
			time.Sleep(dur)
			mu.Lock()
			n++
			if n > warmup && n <= total {
				counts[user]++
			}
			if n == total {
				cancel()
			}
			mu.Unlock()
			l.Release()
		}
	}
	start := time.Now()
	for range clients {
		wg.Add(2)
		go run(r1, "heavy3", 3)
		go run(r2, "light1", 1)
	}
	wg.Wait()
	el := time.Since(start)
	share := float64(counts["heavy3"]) / float64(counts["heavy3"]+counts["light1"])
	s1, s2 := r1.fl.Stats(), r2.fl.Stats()
	t.Logf("weight 3 got %d, weight 1 got %d: share %.3f (want 0.75 ± 0.05); %d requests in %v, claims %d+%d, returned %d+%d",
		counts["heavy3"], counts["light1"], share, total, el.Round(time.Millisecond), s1.Claims, s2.Claims, s1.Returned, s2.Returned)
	if share < 0.70 || share > 0.80 {
		t.Fatalf("weight-3 user's share %.3f, want 0.75 ± 0.05", share)
	}
}

// With Redis down each replica schedules alone with max_concurrent / live
// replicas (here 4/2 = 2): no error but busy when its share is taken, no
// hang; when Redis is back the slots in use are leased again.
func TestFleet_RedisDownDegradesAndRecovers(t *testing.T) {
	rd := testsvc.StartPrivateRedis(t) // stopped and restarted
	fo := func() FleetOptions {
		return FleetOptions{Redis: redisClient(t, rd), SlotLease: 3 * time.Second, Grace: 50 * time.Millisecond}
	}
	r1 := startReplica(t, "r1", 4, fo(), FairOptions{MaxWait: 300 * time.Millisecond, Record: true})
	r2 := startReplica(t, "r2", 4, fo(), FairOptions{MaxWait: 300 * time.Millisecond, Record: true})
	ctx := context.Background()
	// Both replicas have beaten their heartbeat once (they count each other).
	for _, r := range []*replica{r1, r2} {
		waitFor(t, "two live replicas", func() bool {
			r.fl.mu.Lock()
			defer r.fl.mu.Unlock()
			return r.fl.live == 2
		})
	}
	rd.Stop()
	for _, r := range []*replica{r1, r2} {
		req := &Request{Model: "m", User: "u"}
		_, err := r.f.Admit(ctx, req) // needs a claim: fails over to the share
		if err != nil {
			apiErr(t, err, 503, "backend_busy") // the claim's failure came after the wait
		} else {
			req.lease.Release()
		}
		waitFor(t, "the replica to notice", func() bool { return r.fl.Stats().Down })
	}
	var held []*Request
	for _, r := range []*replica{r1, r2} {
		for range 2 {
			req := &Request{Model: "m", User: "u", Decision: &Decision{}}
			if _, err := r.f.Admit(ctx, req); err != nil {
				t.Fatalf("within the share while redis is down: %v", err)
			}
			if req.Decision.FleetSlot != FleetSlotShare {
				t.Fatalf("decision while redis is down: fleet slot %q, want %q", req.Decision.FleetSlot, FleetSlotShare)
			}
			held = append(held, req)
		}
		_, err := r.f.Admit(ctx, &Request{Model: "m", User: "u"})
		if err == nil {
			r.fl.mu.Lock()
			t.Logf("%s: live %d, in use %d", r.fl.replica, r.fl.live, r.fl.slots[r.b].inUse)
			r.fl.mu.Unlock()
		}
		apiErr(t, err, 503, "backend_busy")
	}
	rd.Restart()
	c := redisClient(t, rd)
	waitFor(t, "both replicas back on redis", func() bool { return !r1.fl.Stats().Down && !r2.fl.Stats().Down })
	if n := slotCount(t, c, "a"); n != 4 {
		t.Fatalf("%d slots leased after the outage, want the 4 in use", n)
	}
	for _, req := range held {
		req.lease.Release()
	}
	req := &Request{Model: "m", User: "u"}
	if _, err := r1.f.Admit(ctx, req); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	req.lease.Release()
}

// Leases lost in Redis (a restart that no call noticed: here FLUSHALL)
// are leased again at the next renewal while the pool has room; those
// another replica took meanwhile are counted lost and not reused, so the
// pool never holds more than max_concurrent.
func TestFleet_LostLeases(t *testing.T) {
	rd := testsvc.StartRedis(t)
	c := redisClient(t, rd)
	fo := FleetOptions{Redis: c, SlotLease: 1500 * time.Millisecond, Grace: time.Minute}
	a := startReplica(t, "A", 2, fo, FairOptions{MaxWait: 10 * time.Second})
	ctx := context.Background()
	var ra [2]Request
	for i := range ra {
		ra[i] = Request{Model: "m", User: "u"}
		if _, err := a.f.Admit(ctx, &ra[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "A's renewal to lease its slots again", func() bool { return slotCount(t, c, "a") == 2 })
	if st := a.fl.Stats(); st.Lost != 0 {
		t.Fatalf("%d leases lost with room in the pool", st.Lost)
	}

	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	b := startReplica(t, "B", 2, fo, FairOptions{MaxWait: 10 * time.Second})
	var rb [2]Request
	for i := range rb {
		rb[i] = Request{Model: "m", User: "v"}
		if _, err := b.f.Admit(ctx, &rb[i]); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "A to find its leases lost", func() bool { return a.fl.Stats().Lost == 2 })
	if n := slotCount(t, c, "a"); n != 2 {
		t.Fatalf("%d slots in the pool, max_concurrent 2", n)
	}
	// A's requests end; it holds nothing, so its next request waits for B.
	ra[0].lease.Release()
	ra[1].lease.Release()
	if held, inUse := a.fl.Held(a.b); held != 0 || inUse != 0 {
		t.Fatalf("A holds %d, uses %d; want 0 and 0", held, inUse)
	}
	got := make(chan error, 1)
	next := &Request{Model: "m", User: "u"}
	go func() { _, err := a.f.Admit(ctx, next); got <- err }()
	select {
	case err := <-got:
		t.Fatalf("A admitted a request while B holds every slot (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	rb[0].lease.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	next.lease.Release()
	rb[1].lease.Release()
}

// A user far above its share on one replica still gets a slot while
// another replica's user floods: the starvation bound holds fleet-wide
// (a promoted waiter bids below every fair-share key).
func TestFleet_NoStarvationAcrossReplicas(t *testing.T) {
	rd := testsvc.StartRedis(t)
	o := FairOptions{MaxWait: 30 * time.Second, StarvationAfter: 300 * time.Millisecond}
	r1 := startReplica(t, "r1", 2, FleetOptions{Redis: redisClient(t, rd)}, o)
	r2 := startReplica(t, "r2", 2, FleetOptions{Redis: redisClient(t, rd)}, o)
	r2.fl.charge("starved", 1e12) // would not catch up for many half-lives
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &Request{Model: "m", User: "flood"}
			for ctx.Err() == nil {
				if _, err := r1.f.Admit(ctx, req); err != nil {
					return
				}
				time.Sleep(2 * time.Millisecond)
				req.lease.Release()
			}
		}()
	}
	waitFor(t, "the flood to hold every slot", func() bool { held, _ := r1.fl.Held(r1.b); return held == 2 })
	start := time.Now()
	req := &Request{Model: "m", User: "starved"}
	if _, err := r2.f.Admit(ctx, req); err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	req.lease.Release()
	cancel()
	wg.Wait()
	t.Logf("served after %v (starvation bound 300ms)", waited)
	if waited < 300*time.Millisecond {
		t.Fatalf("served after %v, before the starvation bound: its key should have lost to the flood's", waited)
	}
}

// With the fleet on, a recorded decision says where the slot came from:
// a request that had to wait for a claim ("claimed", with the time it
// waited for it), then one that found the idle slot its replica kept
// ("held", no wait), with the user's fleet-wide key before its cost.
func TestFleet_RecordsDecision(t *testing.T) {
	rd := testsvc.StartRedis(t)
	r := startReplica(t, "A", 1, FleetOptions{Redis: redisClient(t, rd), Grace: time.Minute}, FairOptions{Record: true, MaxWait: 10 * time.Second})
	ctx := context.Background()
	admit := func() *Decision {
		t.Helper()
		req := &Request{Model: "m", User: "u", EstTokens: 500, Decision: &Decision{}}
		l, err := r.f.Admit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		l.Release()
		return req.Decision
	}
	d := admit()
	if d.FleetSlot != FleetSlotClaimed || d.FleetWait <= 0 || d.FleetWait > d.QueueWait || d.FleetKey != 0 || d.Chosen != "a" {
		t.Fatalf("first request: %+v, want claimed, 0 < fleet wait ≤ queue wait, key 0", d)
	}
	d = admit()
	if d.FleetSlot != FleetSlotHeld || d.FleetWait != 0 || math.Abs(d.FleetKey-500) > 1 {
		t.Fatalf("second request: %+v, want held, no fleet wait, key ≈ 500 (the first's cost)", d)
	}
}
