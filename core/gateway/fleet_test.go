package gateway

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/sched"
)

// The scheduler fleet end to end: two gateways sharing one MariaDB and one
// Redis in front of one fakellm backend with max_concurrent 4.

const (
	fleetBackend = "fleet-vllm"
	fleetCap     = 4
	fleetLease   = 2 * time.Second
)

// fleetGW is one replica of the fleet test.
type fleetGW struct {
	gw    *Gateway
	base  string
	fleet *fleetComponent
}

// startSchedFleet starts n gateways named gw-a, gw-b… over one store and
// one Redis, all in front of the backend at url.
func startSchedFleet(t *testing.T, n int, url string) ([]*fleetGW, *redis.Client) {
	t.Helper()
	db := testsvc.StartMariaDB(t)
	rd := testsvc.StartRedis(t)
	y := fmt.Sprintf(`listen: 127.0.0.1:0
plugins: %s
store: {driver: mysql, dsn: %q}
redis: {addr: %q, db: %d}
scheduler: {slot_lease: %s}
timeouts: {queue_wait: 60s}
backends:
  - {name: %s, engine: vllm, url: %q, max_concurrent: %d}
`, plugins.YAML, db.DSN, rd.Addr, rd.DB, fleetLease, fleetBackend, url, fleetCap)
	var out []*fleetGW
	for i := range n {
		cfg, err := config.Parse([]byte(y), ".")
		if err != nil {
			t.Fatal(err)
		}
		d := t.TempDir()
		cfg.Audit.Spool, cfg.Audit.Embedded = filepath.Join(d, "spool"), filepath.Join(d, "audit.db")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		g, err := Start(context.Background(), Options{Config: cfg, AdminKey: adminKey, Logger: runLogs.Logger(), Listener: ln,
			Replica: fmt.Sprintf("gw-%c", 'a'+i)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = g.Close(ctx)
		})
		r := &fleetGW{gw: g, base: "http://" + g.Addr.String()}
		for _, c := range g.life.started {
			if fc, ok := c.(*fleetComponent); ok && fc.fl != nil {
				r.fleet = fc
			}
		}
		if r.fleet == nil {
			t.Fatal("the gateway runs no scheduler fleet with redis.addr set: Start must build its admitter with newScheduler and start the fleet component")
		}
		out = append(out, r)
	}
	return out, redis.NewClient(&redis.Options{Addr: rd.Addr, DB: rd.DB})
}

// abandon stops the fleet's loop without giving anything back, as a
// crashed replica: no renewal, no release, no bid withdrawn.
func (c *fleetComponent) abandon() {
	c.cancel(sched.ErrAbandoned)
	<-c.done
}

// slotsOf lists the slot leases in Redis held by replica.
func slotsOf(t *testing.T, rc *redis.Client, replica string) int {
	t.Helper()
	all, err := rc.ZRange(context.Background(), sched.DefaultFleetPrefix+"{"+fleetBackend+"}:slots", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range all {
		if strings.HasPrefix(m, replica+":") {
			n++
		}
	}
	return n
}

// fleetLoad runs clients goroutines sending chat requests through gw as key
// until ctx is done, calling done after each success. An error while ctx
// lives fails the test.
func fleetLoad(ctx context.Context, t *testing.T, wg *sync.WaitGroup, gw *fleetGW, key string, clients int, done func()) {
	c := openai.NewClient(option.WithBaseURL(gw.base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0),
		option.WithRequestTimeout(60*time.Second))
	p := chatParams(vllmModel, "Say something short")
	p.MaxTokens = openai.Int(8)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := c.Chat.Completions.New(ctx, p); err != nil {
					if ctx.Err() == nil {
						t.Errorf("request through %s: %v", gw.base, err)
					}
					return
				}
				done()
			}
		}()
	}
}

// Two replicas, users of weights 3 and 1 each sending through its own:
// fakellm never sees more than max_concurrent requests at once, the
// shares of the saturated backend are 3:1 within ±5 %, and when one
// replica dies (its fleet stops without giving back: a crash, simulated in
// process) its slots come back to the other within the lease time.
func TestFleet_TwoReplicasShareCapAndWeights(t *testing.T) {
	fake, url := startFake(t, fakellm.Config{Engine: "vllm", Models: []string{vllmModel}, TTFT: 20 * time.Millisecond, Tokens: 8})
	gws, rc := startSchedFleet(t, 2, url)
	defer rc.Close()
	a, b := gws[0], gws[1]
	over := map[string]any{"rpm_limit_override": 1000000, "max_concurrent_override": 1000, "token_budget_override": 1000000000}
	withWeight := func(w float64) map[string]any {
		m := map[string]any{"weight_override": w}
		for k, v := range over {
			m[k] = v
		}
		return m
	}
	_, heavy := newUser(t, a.base, "fleet-heavy", "staff", withWeight(3), nil)
	_, light := newUser(t, a.base, "fleet-light", "staff", withWeight(1), nil)

	// Shares and the cap, both replicas saturated.
	const warmup, counted = 60, 400
	fake.ResetPeak()
	var mu sync.Mutex
	counts := map[string]int{}
	n := 0
	ctx, stop := context.WithCancel(context.Background())
	count := func(user string) func() {
		return func() {
			mu.Lock()
			defer mu.Unlock()
			n++
			if n > warmup && n <= warmup+counted {
				counts[user]++
			}
			if n == warmup+counted {
				stop()
			}
		}
	}
	var wg sync.WaitGroup
	fleetLoad(ctx, t, &wg, a, heavy.FullKey, 8, count("heavy"))
	fleetLoad(ctx, t, &wg, b, light.FullKey, 8, count("light"))
	hang := time.AfterFunc(60*time.Second, stop)
	wg.Wait()
	hang.Stop()
	st := fake.Stats()
	share := float64(counts["heavy"]) / float64(counted)
	t.Logf("weight 3 through gw-a: %d, weight 1 through gw-b: %d of %d (share %.3f, want 0.75 ± 0.05); fakellm peak %d of %d",
		counts["heavy"], counts["light"], counted, share, st.PeakConcurrent, fleetCap)
	if st.PeakConcurrent > fleetCap {
		t.Fatalf("fakellm served %d requests at once; max_concurrent is %d across the fleet", st.PeakConcurrent, fleetCap)
	}
	if counts["heavy"]+counts["light"] != counted {
		t.Fatalf("counted %d requests, want %d (a replica stopped serving?)", counts["heavy"]+counts["light"], counted)
	}
	if share < 0.70 || share > 0.80 {
		t.Fatalf("the weight-3 user got %.3f of the backend, want 0.75 ± 0.05", share)
	}

	// gw-a dies while it holds slots: they stay leased until they expire,
	// then gw-b's waiters get them all.
	ctx, stop = context.WithCancel(context.Background())
	defer stop()
	heavyCtx, stopHeavy := context.WithCancel(ctx)
	var wgHeavy, wgLight sync.WaitGroup
	fleetLoad(heavyCtx, t, &wgHeavy, a, heavy.FullKey, 4, func() {})
	fleetLoad(ctx, t, &wgLight, b, light.FullKey, 8, func() {})
	waitUntil(t, "gw-a to hold slots", 10*time.Second, func() bool { return slotsOf(t, rc, "gw-a") > 0 })
	a.fleet.abandon()
	killed := time.Now()
	stopHeavy() // its clients see the crash
	wgHeavy.Wait()
	// A crashed process's backend connections die with it, and the
	// backend drops those generations; in process, gw-a finishes its
	// abandoned requests instead, which may outlast the lease. The cap
	// is checked from when they are gone.
	waitUntil(t, "gw-a's abandoned requests to end", 10*time.Second, func() bool {
		var n int64
		for _, bk := range a.gw.Reg.Backends() {
			n += bk.InFlight()
		}
		return n == 0
	})
	fake.ResetPeak()
	held := slotsOf(t, rc, "gw-a")
	waitUntil(t, "gw-a's slots to expire", fleetLease+5*time.Second, func() bool { return slotsOf(t, rc, "gw-a") == 0 })
	back := time.Since(killed)
	waitUntil(t, "gw-b to use every slot", 10*time.Second, func() bool { return fake.Stats().Concurrent == fleetCap })
	stop()
	wgLight.Wait()
	t.Logf("gw-a held %d slots when killed; they came back after %v (lease %v)", held, back, fleetLease)
	if back > fleetLease+2*time.Second {
		t.Fatalf("a dead replica's slots came back after %v, lease %v", back, fleetLease)
	}
	if p := fake.Stats().PeakConcurrent; p > fleetCap {
		t.Fatalf("fakellm served %d requests at once after the kill; max_concurrent is %d", p, fleetCap)
	}
}

// waitUntil polls cond every 10 ms for up to d: it detects hangs.
func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, d, cond)
}
