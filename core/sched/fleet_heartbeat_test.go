package sched

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// A replica that dies holding every slot of a backend in use (its loop
// stops: nothing renewed, its in-use slots still leased) gives
// them back after about two heartbeats, not after the slot lease (10 s
// here, the default): the waiting replica is admitted within DeadAfter
// plus its claim tick, and the pool never holds more than max_concurrent.
func TestFleet_DeadReplicaSlotsBackAfterHeartbeats(t *testing.T) {
	rd := testsvc.StartRedis(t)
	c := redisClient(t, rd)
	fo := FleetOptions{Redis: c, SlotLease: 10 * time.Second, Heartbeat: 200 * time.Millisecond}
	a := startReplica(t, "A", 2, fo, FairOptions{MaxWait: 20 * time.Second})
	ctx := context.Background()
	var held [2]Request
	for i := range held {
		held[i] = Request{Model: "m", User: "u"}
		if _, err := a.f.Admit(ctx, &held[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Die with both slots in use: they stay leased, nothing renews them.
	a.kill()
	if n := slotCount(t, c, "a"); n != 2 {
		t.Fatalf("%d slots leased after A died, want its 2", n)
	}
	died := time.Now()

	b := startReplica(t, "B", 2, fo, FairOptions{MaxWait: 20 * time.Second})
	dead := b.fl.DeadAfter()
	r := Request{Model: "m", User: "v"}
	if _, err := b.f.Admit(ctx, &r); err != nil {
		t.Fatal(err)
	}
	waited := time.Since(died)
	t.Logf("the dead replica's slots came back %v after it died (dead after %v, slot lease %v)", waited, dead, fo.SlotLease)
	if limit := dead + fleetRetry + time.Second; waited > limit {
		t.Fatalf("B was admitted %v after A died; want within %v (the slot lease is %v)", waited, limit, fo.SlotLease)
	}
	if n := slotCount(t, c, "a"); n > 2 {
		t.Fatalf("%d slots leased, max_concurrent 2", n)
	}
	r.lease.Release()
}

// The heartbeat scripts judge a replica dead only while beats keep coming
// from the others: after a silence on the backend (Redis stalled,
// restarted, or every replica stalled) nobody is swept until beats have
// run for DeadAfter again. Driven with the scripts' own clock (ARGV now).
func TestFleet_HeartbeatSilenceSweepsNobody(t *testing.T) {
	rd := testsvc.StartRedis(t)
	c := redisClient(t, rd)
	const (
		deadAfter = 2500
		gap       = 1500
	)
	keys := []string{"hb:{x}:slots", "hb:{x}:alive", "hb:{x}:beat"}
	ctx := context.Background()
	renew := func(now int64, replica string, members ...string) {
		t.Helper()
		args := []any{now, now + 10_000, 4, replica, deadAfter, gap}
		for _, m := range members {
			args = append(args, m)
		}
		if err := renewScript.Run(ctx, c, keys, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	slots := func() []string {
		t.Helper()
		m, err := c.ZRange(ctx, keys[0], 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(m)
		return m
	}
	want := func(at int64, w ...string) {
		t.Helper()
		if got := slots(); !slices.Equal(got, w) {
			t.Fatalf("t=%dms: slots %v, want %v", at, got, w)
		}
	}
	renew(0, "A", "A:1", "A:2")
	renew(0, "B", "B:1")
	// 3 s of silence (longer than DeadAfter): B's first beat after it
	// must not take A's slots, nor its beats in the next DeadAfter.
	renew(3000, "B", "B:1")
	want(3000, "A:1", "A:2", "B:1")
	renew(3500, "B", "B:1")
	want(3500, "A:1", "A:2", "B:1")
	renew(3600, "A", "A:1", "A:2") // A was alive: it beats again
	// Now A dies; B beats every 500 ms (no silence). A's slots go once its
	// last beat (3600) is DeadAfter old: not at 6000, at 6200.
	for now := int64(4000); now <= 6000; now += 500 {
		renew(now, "B", "B:1")
	}
	want(6000, "A:1", "A:2", "B:1")
	renew(6200, "B", "B:1")
	want(6200, "B:1")
	if n, err := c.ZScore(ctx, keys[1], "A").Result(); err == nil {
		t.Fatalf("A's heartbeat (%v) still recorded after it was swept", strconv.FormatFloat(n, 'f', 0, 64))
	}
}
