package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// TestFleetGatewaySIGKILL: two gateway processes share one Redis and one
// backend whose max_concurrent (4) they hold fleet-wide as slot leases
// (scheduler.slot_lease left at its default, 10 s). Under load through
// both, one is SIGKILLed: a crashed process renews nothing and releases
// nothing, and its heartbeat stops, so its slots come back after about
// two heartbeats (DeadAfter, 2.5 s by default) rather than when their
// leases run out (they halved the fleet's capacity for 10 s). The
// backend — which counts what really reaches it — never serves more than
// 4 at once, the survivor's clients see no error, and the survivor is
// using all 4 slots again within DeadAfter (plus the claim loop's
// reaction time) after the kill.
func TestFleetGatewaySIGKILL(t *testing.T) {
	const (
		maxConc   = 4
		lease     = 10 * time.Second        // the default slot_lease
		deadAfter = 2500 * time.Millisecond // sched.Fleet.DeadAfter with the default heartbeat (1 s)
		watch     = deadAfter + 4*time.Second
	)
	rds := testsvc.StartRedis(t)
	bin, pluginsYAML := buildGateway(t)
	fake, fakeAddr := serveFake(t, fakellm.Config{Engine: "vllm", Models: []string{killModel}, Tokens: 12,
		TTFT: 15 * time.Millisecond, TPS: 600})

	replica := func(name string) *childGW {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		e := &killEnv{t: t, bin: bin, config: filepath.Join(dir, "mindrouter.yaml"), spool: filepath.Join(dir, "spool")}
		y := fmt.Sprintf(`listen: %s
plugins: %s
log: {level: warn}
data_dir: %q
store: {driver: sqlite, dsn: data/mr.db}
redis: {addr: %q, db: %d}
backends:
  - {name: fake-vllm, engine: vllm, url: "http://%s", max_concurrent: %d}
scheduler: {policy: fair, fleet: auto}
`, freeAddr(t), pluginsYAML, dir, rds.Addr, rds.DB, fakeAddr, maxConc)
		if err := os.WriteFile(e.config, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		return e.start()
	}
	a, b := replica("a"), replica("b")

	la, lb := startLoad(a, 8), startLoad(b, 8)
	// Sample what the backend serves at once, every few milliseconds.
	type sample struct {
		at time.Time
		n  int64
	}
	samples := make(chan sample, 1<<16)
	stopSampling := make(chan struct{})
	go func() {
		defer close(samples)
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(3 * time.Millisecond):
			}
			select {
			case samples <- sample{time.Now(), fake.Stats().Concurrent}:
			default:
			}
		}
	}()
	time.Sleep(3 * time.Second)
	if la.completed() == 0 || lb.completed() == 0 {
		t.Fatalf("no traffic before the kill: a %d, b %d complete", la.completed(), lb.completed())
	}
	failedBefore := lb.fail.Load()
	peakBefore := fake.Stats().PeakConcurrent
	fake.ResetPeak()
	killed := time.Now()
	a.kill()
	la.halt()
	time.Sleep(watch)
	close(stopSampling)
	doneB := lb.halt()

	var (
		peak      int64
		recovered time.Time // first moment after the kill that b alone used every slot
	)
	for s := range samples {
		if s.n > maxConc {
			t.Logf("%d at once %v after the kill", s.n, s.at.Sub(killed).Round(time.Millisecond))
		}
		peak = max(peak, s.n)
		// a's requests in flight at the kill die with its connections at
		// once; give them a moment so the count is b's alone.
		if recovered.IsZero() && s.at.After(killed.Add(100*time.Millisecond)) && s.n == maxConc {
			recovered = s.at
		}
	}
	st := fake.Stats()
	t.Logf("backend peak before the kill %d, after it %d", peakBefore, st.PeakConcurrent)
	st.PeakConcurrent = max(st.PeakConcurrent, peakBefore)
	t.Logf("backend: peak %d at once (max_concurrent %d), %d completed; b completed %d, failed %d; all %d slots in use by b %v after the kill (dead after %v, lease %v)",
		max(peak, st.PeakConcurrent), maxConc, st.Completed, len(doneB), lb.fail.Load(), maxConc, recovered.Sub(killed).Round(time.Millisecond), deadAfter, lease)
	if p := max(peak, st.PeakConcurrent); p > maxConc {
		t.Errorf("the backend served %d at once; max_concurrent is %d across the fleet", p, maxConc)
	}
	if n := lb.fail.Load(); n != failedBefore || n != 0 {
		t.Errorf("the survivor's clients saw %d failed requests (%d before the kill)", n, failedBefore)
	}
	if recovered.IsZero() {
		t.Fatalf("the survivor never used all %d slots within %v of the kill (the lease is %v)", maxConc, watch, lease)
	}
	if d := recovered.Sub(killed); d > deadAfter+1500*time.Millisecond {
		t.Errorf("the killed replica's slots came back %v after the kill; dead after %v (the lease is %v)", d, deadAfter, lease)
	}
}
