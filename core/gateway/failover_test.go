package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
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
	return startPairYAML(t, fa, fb, "")
}

// startPairYAML is startPair with more configuration (retries:, breaker:).
func startPairYAML(t *testing.T, fa, fb fakellm.Config, extraYAML string) *pair {
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
%s`, p.bAddr, extraYAML))
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
	testutil.WaitFor(t, what, 90*time.Second, cond)
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

// streamLoad runs streaming chat requests from n goroutines until stop.
// A stream that fails before its first chunk had not started for the
// client: that is an error the gateway must not let through. One that
// fails after its first chunk had started (allowed, counted).
type streamLoad struct {
	load                 // ok: streams that finished without error
	started atomic.Int64 // streams that failed after their first chunk
}

func startStreamLoad(e *env, n int) *streamLoad {
	l := &streamLoad{load: load{stop: make(chan struct{})}}
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
				chunks, err := stream(e, fmt.Sprintf("stream worker %d request %d", i, j))
				switch {
				case err == nil && chunks > 0:
					l.ok.Add(1)
				case chunks > 0:
					l.started.Add(1)
				default:
					l.mu.Lock()
					l.errs = append(l.errs, fmt.Errorf("stream with no chunk: %w", err))
					l.mu.Unlock()
				}
			}
		}()
	}
	return l
}

// The acceptance: with one of two fakellm backends killed
// mid-run, clients see no error for non-streaming requests (in flight on
// it, or sent to it before its breaker opened) and none for streams that
// had not started — the killed backend had sent its response headers for
// streams waiting for their first token (the TTFT is long, so most
// streams are in that state), and those are retried on the other
// backend. Its breaker opens, requests stop going to it, and after it
// comes back a half-open probe (breaker.cooldown 1s) closes the breaker.
func TestFailover_BackendKilledMidRun(t *testing.T) {
	slow := fakellm.Config{TTFT: 200 * time.Millisecond, Tokens: 8}
	// Queue depth alone spreads the load: the latency and throughput
	// scores would send it all to whichever backend looked faster first.
	p := startPairYAML(t, slow, slow, "breaker: {cooldown: 1s}\nscheduler: {weights: {latency: 0, throughput: 0}}\n")
	deadB := p.gw.Reg.Backend("gpu1b-vllm")

	l := startLoad(p.env, 4)
	sl := startStreamLoad(p.env, 4)
	waitFailover(t, "requests and streams waiting for their first token on the backend to kill", func() bool {
		st := p.b.Stats()
		return st.Requests[chatPath] > 8 && st.ActiveStreams > 0
	})
	p.b.Close()

	waitFailover(t, "the dead backend's breaker to open", func() bool { return deadB.BreakerState() != "closed" })
	// The live backend keeps serving while the dead one is skipped.
	before, sbefore := l.ok.Load(), sl.ok.Load()
	waitFailover(t, "progress with one backend", func() bool { return l.ok.Load() > before+20 && sl.ok.Load() > sbefore+5 })

	p.restartB(t)
	waitFailover(t, "the breaker to close after the backend came back", func() bool { return deadB.BreakerState() == "closed" })
	waitFailover(t, "requests on the restarted backend", func() bool { return p.b.Stats().Requests[chatPath] > 2 })
	sl.finish(t)
	l.finish(t)
	t.Logf("%d requests and %d streams served without error; %d streams broke after they started",
		l.ok.Load(), sl.ok.Load(), sl.started.Load())
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

// A stream whose backend sent its headers and then died before its first
// event had not started for the client: it is retried on the other
// backend and the client sees a whole stream; the failure counts against
// the dead backend's breaker (breaker.failures 1: opened by it).
func TestFailover_StreamHeadersThenClose(t *testing.T) {
	p := startPairYAML(t, fakellm.Config{}, fakellm.Config{TTFT: time.Minute}, "breaker: {failures: 1}\n")
	bad := p.gw.Reg.Backend("gpu1b-vllm")
	bad.SetPriority(100) // chosen first
	type result struct {
		chunks int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		n, err := stream(p.env, "headers then close")
		done <- result{n, err}
	}()
	waitFailover(t, "the stream's headers from the backend to kill", func() bool { return p.b.Stats().ActiveStreams == 1 })
	p.b.Close() // vLLM sent its headers at once; the first token was a minute away
	r := <-done
	if r.err != nil || r.chunks == 0 {
		t.Fatalf("stream: %d chunks, error %v", r.chunks, r.err)
	}
	if n := p.vllm.Stats().Requests[chatPath]; n != 1 {
		t.Fatalf("the other backend served %d requests, want the retried stream", n)
	}
	if got := bad.BreakerState(); got != "open" {
		t.Fatalf("breaker %q after a failed attempt with breaker.failures 1", got)
	}
}

// A stream whose backend sent its headers and then nothing is failed over
// after retries.attempt_timeout, before the client saw anything.
func TestFailover_StreamSilentAfterHeaders(t *testing.T) {
	p := startPairYAML(t, fakellm.Config{}, fakellm.Config{TTFT: time.Minute}, "retries: {attempt_timeout: 1s}\n")
	p.gw.Reg.Backend("gpu1b-vllm").SetPriority(100)
	if n, err := stream(p.env, "silent"); err != nil || n == 0 {
		t.Fatalf("stream: %d chunks, error %v", n, err)
	}
	if a, b := p.vllm.Stats().Requests[chatPath], p.b.Stats().Requests[chatPath]; a != 1 || b != 1 {
		t.Fatalf("requests: %d on the live backend, %d on the silent one; want 1 and 1", a, b)
	}
}

// retries.max_attempts 1 never retries: the failing backend's answer
// reaches the client and the other backend is never asked.
func TestFailover_MaxAttemptsOne(t *testing.T) {
	p := startPairYAML(t, fakellm.Config{}, fakellm.Config{ErrorRate: 1}, "retries: {max_attempts: 1}\n")
	p.gw.Reg.Backend("gpu1b-vllm").SetPriority(100)
	code, _, v := rawPost(t, p.base+chatPath, adminKey, `{"model":"`+vllmModel+`","messages":[{"role":"user","content":"hi"}]}`)
	if code != 502 || !strings.Contains(fmt.Sprint(v), "EngineCore") {
		t.Fatalf("status %d body %v, want the backend's error relayed as 502", code, v)
	}
	if n := p.vllm.Stats().Requests[chatPath]; n != 0 {
		t.Fatalf("%d requests retried on the other backend with max_attempts 1", n)
	}
}

// A stream that breaks after it started (the backend dropped the
// connection mid-answer) counts against the backend's breaker; a client
// that leaves mid-stream does not.
func TestFailover_MidStreamFailureFeedsBreaker(t *testing.T) {
	t.Run("backend drops", func(t *testing.T) {
		// Paced (10 ms a token, dropped after 8): the gateway has relayed
		// the first events when the connection drops. Unpaced, all eight
		// and the drop could arrive before the first event reached the
		// client, and the gateway rightly retried elsewhere (seen under
		// the parallel race pass).
		p := startPairYAML(t, fakellm.Config{}, fakellm.Config{DropRate: 1, Tokens: 16, TPS: 100}, "breaker: {failures: 2}\n")
		bad := p.gw.Reg.Backend("gpu1b-vllm")
		bad.SetPriority(100)
		for i := range 2 {
			n, err := stream(p.env, fmt.Sprintf("dropped %d", i))
			if err == nil || n == 0 {
				t.Fatalf("stream %d: %d chunks, error %v; want an error after the start", i, n, err)
			}
		}
		// The relay reports as it ends, just after the client has the error.
		waitFailover(t, "the breaker to open after two streams broken mid-way (breaker.failures 2)",
			func() bool { return bad.BreakerState() == "open" })
	})
	t.Run("client leaves", func(t *testing.T) {
		p := startPairYAML(t, fakellm.Config{}, fakellm.Config{TPS: 20, Tokens: 200}, "breaker: {failures: 1}\n")
		b := p.gw.Reg.Backend("gpu1b-vllm")
		b.SetPriority(100)
		for i := range 3 {
			ctx, cancel := context.WithCancel(context.Background())
			s := p.client.Chat.Completions.NewStreaming(ctx, chatParams(vllmModel, fmt.Sprintf("leave %d", i)))
			if !s.Next() {
				t.Fatalf("no first chunk: %v", s.Err())
			}
			cancel()
			_ = s.Close()
			waitFailover(t, "the backend to see the client leave", func() bool { return p.b.Stats().ActiveStreams == 0 })
		}
		if got := b.BreakerState(); got != "closed" {
			t.Fatalf("clients leaving moved the breaker to %q", got)
		}
	})
}

// BenchmarkStreamFirstChunk measures a stream's time to its first event
// at the client (fakellm with no TTFT, so the figure is the gateway's and
// the loopback's), through the gateway and straight to fakellm: holding
// the client's response until the backend's first event must not delay
// that event (ttft-p50-µs, ttft-p99-µs). Run with
// go test -run '^$' -bench StreamFirstChunk ./core/gateway.
func BenchmarkStreamFirstChunk(b *testing.B) {
	t := &testing.T{}
	e := startEnv(t, fakellm.Config{Tokens: 8}, fakellm.Config{}, "log: {level: warn}\n")
	body := []byte(`{"model":"` + vllmModel + `","messages":[{"role":"user","content":"Tell me about gateways"}],"max_tokens":8,"stream":true}`)
	b.Run("gateway", func(b *testing.B) { benchFirstChunk(b, e.base+chatPath, body, "Bearer "+adminKey) })
	b.Run("direct", func(b *testing.B) { benchFirstChunk(b, e.vllmURL+chatPath, body, "") })
}

func benchFirstChunk(b *testing.B, url string, body []byte, authz string) {
	c := &fasthttp.Client{StreamResponseBody: true}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	req.SetRequestURI(url)
	req.Header.SetMethod("POST")
	req.Header.SetContentType("application/json")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	req.SetBody(body)
	buf := make([]byte, 4096)
	var ttft []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if err := c.Do(req, resp); err != nil || resp.StatusCode() != 200 {
			b.Fatalf("%v %d", err, resp.StatusCode())
		}
		s := resp.BodyStream()
		n, err := s.Read(buf)
		if n == 0 {
			b.Fatalf("no first chunk: %v", err)
		}
		ttft = append(ttft, time.Since(t0))
		if _, err := io.Copy(io.Discard, s); err != nil {
			b.Fatal(err)
		}
		_ = resp.CloseBodyStream()
	}
	slices.Sort(ttft)
	b.ReportMetric(float64(ttft[len(ttft)/2].Microseconds()), "ttft-p50-µs")
	b.ReportMetric(float64(ttft[len(ttft)*99/100].Microseconds()), "ttft-p99-µs")
}
