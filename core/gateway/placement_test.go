package gateway

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// Placement around failing backends: an open breaker is a hard
// constraint, and a retry never goes back to a backend it tried while
// another candidate exists (it waits in the queue for that one). Before
// both held, a retry whose healthy candidates were full (or, with the
// fleet, held no idle slot on this replica) took the failing backend's
// free slot again and failed: 38 % of requests with one of three backends
// failing half its requests, most of them with one failing everything.

// burst sends n non-streaming chat requests from workers goroutines and
// returns how many failed, with the first few errors.
func burst(e *env, workers, n int) (failed int64, first []error) {
	var (
		next, bad atomic.Int64
		mu        sync.Mutex
		wg        sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				_, err := e.client.Chat.Completions.New(ctx, chatParams(vllmModel, fmt.Sprintf("worker %d request %d", w, i)))
				cancel()
				if err != nil {
					bad.Add(1)
					mu.Lock()
					if len(first) < 3 {
						first = append(first, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return bad.Load(), first
}

// One of three backends answers 500 to half its requests; the other two
// are healthy but small, so a retry often finds them full while the
// failing one has free slots. Its breaker is kept closed (a high
// threshold) so that every request meets the retry placement: every
// failed attempt is retried on a healthy backend (waiting for one when
// both are full), and the clients see (nearly) no error.
func TestPlacement_HalfFailingBackendOfThree(t *testing.T) {
	t.Parallel()
	pace := fakellm.Config{TTFT: 20 * time.Millisecond, Tokens: 8}
	bad := pace
	bad.ErrorRate, bad.Seed = 0.5, 19
	_, u2 := startFake(t, fakellm.Config{Engine: "vllm", Models: []string{vllmModel}, TTFT: pace.TTFT, Tokens: pace.Tokens})
	_, u3 := startFake(t, fakellm.Config{Engine: "vllm", Models: []string{vllmModel}, TTFT: pace.TTFT, Tokens: pace.Tokens})
	e := startEnv(t, bad, fakellm.Config{}, fmt.Sprintf(`  - {name: ok1-vllm, engine: vllm, url: %q, max_concurrent: 2}
  - {name: ok2-vllm, engine: vllm, url: %q, max_concurrent: 2}
discovery: {interval: 1h}
scheduler: {weights: {latency: 0, throughput: 0}}
breaker: {failures: 100000}
`, u2, u3))
	waitFailover(t, "the three vLLM backends routable", func() bool {
		return e.gw.Reg.Backend("gpu1-vllm").Routable() && e.gw.Reg.Backend("ok1-vllm").Routable() &&
			e.gw.Reg.Backend("ok2-vllm").Routable()
	})
	const n = 240
	failed, first := burst(e, 8, n)
	injected := e.vllm.Stats().Errors
	t.Logf("%d of %d requests failed; the failing backend answered %d errors", failed, n, injected)
	if injected < 10 {
		t.Fatalf("the failing backend answered only %d errors: nothing was retried", injected)
	}
	if failed > n/100 { // near 0: at most 1 %
		t.Fatalf("%d of %d requests failed (first: %v)", failed, n, first)
	}
}

// One backend answers 500 to everything beside a healthy one with room,
// under the Redis fleet (which makes a replica's free slots the ones it
// holds: a retry that found none idle on the healthy backend took the
// failing one's). Nearly every request succeeds: the failing backend's
// breaker opens and it gets only its probes, and each failed attempt is
// retried on the healthy backend.
func TestPlacement_FailingBackendBesideHealthyFleet(t *testing.T) {
	t.Parallel()
	rd := testsvc.StartRedis(t)
	pace := fakellm.Config{TTFT: 10 * time.Millisecond, Tokens: 8}
	bad := pace
	bad.ErrorRate = 1
	_, u2 := startFake(t, fakellm.Config{Engine: "vllm", Models: []string{vllmModel}, TTFT: pace.TTFT, Tokens: pace.Tokens})
	e := startEnv(t, bad, fakellm.Config{}, fmt.Sprintf(`  - {name: ok-vllm, engine: vllm, url: %q, max_concurrent: 16}
discovery: {interval: 1h}
redis: {addr: %q, db: %d}
scheduler: {slot_lease: 2s}
breaker: {cooldown: 1s}
`, u2, rd.Addr, rd.DB))
	waitFailover(t, "both vLLM backends routable", func() bool {
		return e.gw.Reg.Backend("gpu1-vllm").Routable() && e.gw.Reg.Backend("ok-vllm").Routable()
	})
	const n = 240
	failed, first := burst(e, 8, n)
	injected := e.vllm.Stats().Errors
	t.Logf("%d of %d requests failed; the failing backend answered %d errors (breaker %s)",
		failed, n, injected, e.gw.Reg.Backend("gpu1-vllm").BreakerState())
	if injected < 5 {
		t.Fatalf("the failing backend answered only %d errors: nothing was retried", injected)
	}
	if failed > n/100 {
		t.Fatalf("%d of %d requests failed (first: %v)", failed, n, first)
	}
}
