package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// Failover: two vLLM-flavoured fakellm backends serve the same model
// (gpu1-vllm from startEnv, gpu1b-vllm added here). Discovery polls
// rarely (1 h) so that what routes around a failing backend is the
// attempt loop and its circuit breaker, not a health probe.

const chatPath = "/v1/chat/completions"

type pair struct {
	*env
	b     *fakellm.Server
	bAddr string
}

func startPair(t *testing.T, fa, fb fakellm.Config) *pair {
	t.Helper()
	fb.Engine, fb.Models = "vllm", []string{vllmModel}
	fb.Logger = slog.New(slog.DiscardHandler)
	b, err := fakellm.New(fb)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = b.Serve(ln) }()
	p := &pair{b: b, bAddr: ln.Addr().String()}
	t.Cleanup(func() { p.b.Close() })
	p.env = startEnv(t, fa, fakellm.Config{}, fmt.Sprintf(`  - {name: gpu1b-vllm, engine: vllm, url: "http://%s", max_concurrent: 16}
discovery: {interval: 1h}
`, p.bAddr))
	waitFailover(t, "both vLLM backends routable", func() bool {
		return p.gw.Reg.Backend("gpu1-vllm").Routable() && p.gw.Reg.Backend("gpu1b-vllm").Routable()
	})
	return p
}

// restartB serves a fresh fakellm on gpu1b-vllm's address, as an engine
// restarted on its port.
func (p *pair) restartB(t *testing.T) {
	t.Helper()
	var ln net.Listener
	waitFailover(t, "the port to be free again", func() bool {
		var err error
		ln, err = net.Listen("tcp", p.bAddr)
		return err == nil
	})
	b, err := fakellm.New(fakellm.Config{Engine: "vllm", Models: []string{vllmModel}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = b.Serve(ln) }()
	p.b = b
}

// waitFailover polls cond until it holds; the generous limit only detects a
// hang on a loaded machine.
func waitFailover(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// load sends non-streaming chat requests from n goroutines until stop,
// counting successes and recording every error.
type load struct {
	ok   atomic.Int64
	mu   sync.Mutex
	errs []error
	wg   sync.WaitGroup
	stop chan struct{}
}

func startLoad(e *env, n int) *load {
	l := &load{stop: make(chan struct{})}
	for i := range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for j := 0; ; j++ {
				select {
				case <-l.stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				_, err := e.client.Chat.Completions.New(ctx, chatParams(vllmModel, fmt.Sprintf("worker %d request %d", i, j)))
				cancel()
				if err != nil {
					l.mu.Lock()
					l.errs = append(l.errs, err)
					l.mu.Unlock()
					continue
				}
				l.ok.Add(1)
			}
		}()
	}
	return l
}

func (l *load) finish(t *testing.T) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	for i, err := range l.errs {
		if i == 5 {
			break
		}
		t.Errorf("client error: %v", err)
	}
	if len(l.errs) > 0 {
		t.Fatalf("%d client errors (%d successes)", len(l.errs), l.ok.Load())
	}
}

// stream runs one streaming chat request and reports the chunks received
// before its error, if any.
func stream(e *env, prompt string) (chunks int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := e.client.Chat.Completions.NewStreaming(ctx, chatParams(vllmModel, prompt))
	for s.Next() {
		chunks++
	}
	return chunks, s.Err()
}

// A backend killed mid-run: no client error for non-streaming requests
// (in flight on it, or sent to it before its breaker opened) nor for
// streams that had not started; its breaker opens, requests stop going
// to it, and after it comes back a half-open probe closes the breaker.
func TestFailover_BackendKilledMidRun(t *testing.T) {
	slow := fakellm.Config{TTFT: 20 * time.Millisecond, Tokens: 8}
	p := startPair(t, slow, slow)
	deadB := p.gw.Reg.Backend("gpu1b-vllm")

	l := startLoad(p.env, 4)
	waitFailover(t, "requests on the backend to kill", func() bool { return p.b.Stats().Requests[chatPath] > 4 })
	p.b.Close()

	// Streams sent after the kill had not started anywhere: none may fail.
	var wg sync.WaitGroup
	var streamErrs atomic.Int64
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n, err := stream(p.env, fmt.Sprintf("stream %d", i)); err != nil || n == 0 {
				streamErrs.Add(1)
				t.Errorf("stream %d: %d chunks, error %v", i, n, err)
			}
		}()
	}
	wg.Wait()
	if streamErrs.Load() > 0 {
		t.Fatalf("%d streams failed", streamErrs.Load())
	}

	waitFailover(t, "the dead backend's breaker to open", func() bool { return deadB.BreakerState() != "closed" })
	// The live backend keeps serving while the dead one is skipped.
	before := l.ok.Load()
	waitFailover(t, "progress with one backend", func() bool { return l.ok.Load() > before+20 })

	p.restartB(t)
	waitFailover(t, "the breaker to close after the backend came back", func() bool { return deadB.BreakerState() == "closed" })
	waitFailover(t, "requests on the restarted backend", func() bool { return p.b.Stats().Requests[chatPath] > 2 })
	l.finish(t)
	t.Logf("%d requests served without error", l.ok.Load())
}

// A backend answering 500 (the engine failed) is retried on the other
// one: the client sees no error, and the failing backend's breaker opens.
func TestFailover_ServerErrorRetried(t *testing.T) {
	p := startPair(t, fakellm.Config{}, fakellm.Config{ErrorRate: 1})
	bad := p.gw.Reg.Backend("gpu1b-vllm")
	bad.SetPriority(100) // tried first while its breaker lets it
	for i := range 12 {
		if _, err := p.client.Chat.Completions.New(context.Background(), chatParams(vllmModel, fmt.Sprintf("q %d", i))); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if n, err := stream(p.env, fmt.Sprintf("s %d", i)); err != nil || n == 0 {
			t.Fatalf("stream %d: %d chunks, error %v", i, n, err)
		}
	}
	if got := bad.BreakerState(); got != "open" {
		t.Fatalf("the failing backend's breaker is %q, want open", got)
	}
	if p.b.Stats().Errors < 5 {
		t.Fatalf("the failing backend answered %d errors: the test did not exercise failover", p.b.Stats().Errors)
	}
	// Open: no more requests go to it.
	n := p.b.Stats().Requests[chatPath]
	for i := range 4 {
		if _, err := p.client.Chat.Completions.New(context.Background(), chatParams(vllmModel, fmt.Sprintf("r %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.b.Stats().Requests[chatPath]; got != n {
		t.Fatalf("%d requests reached the backend whose breaker is open", got-n)
	}
}

// A 400 from the backend is the request's fault: it is relayed, never
// retried on the other backend.
func TestFailover_BadRequestNotRetried(t *testing.T) {
	p := startPair(t, fakellm.Config{}, fakellm.Config{})
	total := func() int64 { return p.vllm.Stats().Requests[chatPath] + p.b.Stats().Requests[chatPath] }
	before := total()
	code, _, v := rawPost(t, p.base+chatPath, adminKey,
		`{"model":"`+vllmModel+`","messages":[{"role":"user","content":"hi"}],"tool_choice":"required"}`)
	if code != 400 {
		t.Fatalf("status %d body %v, want 400", code, v)
	}
	if msg := fmt.Sprint(v); !strings.Contains(msg, "`tools` must be set") {
		t.Fatalf("body %v does not relay the backend's message", v)
	}
	if got := total() - before; got != 1 {
		t.Fatalf("%d backend requests for one 400, want 1 (no retry)", got)
	}
	for _, name := range []string{"gpu1-vllm", "gpu1b-vllm"} {
		if s := p.gw.Reg.Backend(name).BreakerState(); s != "closed" {
			t.Fatalf("a client's 400 moved %s's breaker to %q", name, s)
		}
	}
}
