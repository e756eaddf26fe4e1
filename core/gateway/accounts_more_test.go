package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

// headerTap is an http.RoundTripper for Ollama's api client (which does
// not expose response headers): it sets the key and keeps the last
// response's headers.
type headerTap struct {
	key  string
	mu   sync.Mutex
	last http.Header
}

func (h *headerTap) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+h.key)
	res, err := http.DefaultTransport.RoundTrip(r)
	if res != nil {
		h.mu.Lock()
		h.last = res.Header.Clone()
		h.mu.Unlock()
	}
	return res, err
}

func (h *headerTap) header() http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

func ollamaTapClient(t *testing.T, e *env, key string) (*api.Client, *headerTap) {
	t.Helper()
	u, err := url.Parse(e.base)
	if err != nil {
		t.Fatal(err)
	}
	tap := &headerTap{key: key}
	return api.NewClient(u, &http.Client{Transport: tap}), tap
}

// With Redis stopped and quota.redis_down "closed", a limited user's
// request is refused at once with 503 quota_unavailable in the client's
// dialect; with "open" it is admitted. Neither waits on Redis.
func TestAccounts_RedisDownClosedOrOpen(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want int
	}{{"closed", 503}, {"open", 200}} {
		t.Run(tc.mode, func(t *testing.T) {
			rd := testsvc.StartPrivateRedis(t) // stopped
			y := fmt.Sprintf("redis: {addr: %q, timeout: 200ms}\nquota: {redis_down: %s}\n", rd.Addr, tc.mode)
			e := startEnv(t, fakellm.Config{}, fakellm.Config{}, y)
			// staff: every limit set, so each one needs Redis.
			_, k := newUser(t, e.base, "mallory", "staff", nil, nil)
			rd.Stop()
			ctx := context.Background()

			c := client(e, k.FullKey)
			for i := 0; i < 3; i++ { // the first meets the dead Redis, the others the open breaker
				t0 := time.Now()
				_, err := c.Chat.Completions.New(ctx, chatParams(vllmModel, "hi"))
				d := time.Since(t0)
				if d > 2*time.Second {
					t.Fatalf("OpenAI request %d took %v with Redis down", i, d)
				}
				if got := statusOf(err); got != tc.want {
					t.Fatalf("OpenAI request %d: %v (status %d), want %d", i, err, got, tc.want)
				}
				var oe *openai.Error
				if tc.want == 503 && (!errors.As(err, &oe) || oe.Code != "quota_unavailable") {
					t.Errorf("OpenAI: %v, want code quota_unavailable", err)
				}
			}

			ac := anthropicClient(e, false, k.FullKey)
			_, err := ac.Messages.New(ctx, anthropicParams(vllmModel, "hi"))
			var ae *anthropic.Error
			switch {
			case tc.want == 200 && err != nil:
				t.Errorf("Anthropic: %v, want an answer", err)
			case tc.want == 503 && (!errors.As(err, &ae) || ae.StatusCode != 503 || !strings.Contains(ae.RawJSON(), `"overloaded_error"`)):
				t.Errorf("Anthropic: %v, want 503 overloaded_error", err)
			}

			oc, _ := ollamaTapClient(t, e, k.FullKey)
			stream := false
			err = oc.Chat(ctx, &api.ChatRequest{Model: ollamaModel, Stream: &stream,
				Messages: []api.Message{{Role: "user", Content: "hi"}}}, func(api.ChatResponse) error { return nil })
			var se api.StatusError
			switch {
			case tc.want == 200 && err != nil:
				t.Errorf("Ollama: %v, want an answer", err)
			case tc.want == 503 && (!errors.As(err, &se) || se.StatusCode != 503 || se.ErrorMessage == ""):
				t.Errorf("Ollama: %v, want 503 with an error message", err)
			}
		})
	}
}

// checkRateHeaders asserts a 429's Retry-After and the OpenAI rate-limit
// headers for a user with RPM 1 and a token budget of 500,000 (staff).
func checkRateHeaders(t *testing.T, dialect string, h http.Header) {
	t.Helper()
	if h == nil {
		t.Errorf("%s: no response headers", dialect)
		return
	}
	// The window frees the last minute's request within 60 s plus one
	// 100 ms bucket of the in-memory window, rounded up to a second.
	if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 || ra > 61 {
		t.Errorf("%s: Retry-After %q, want 1..61 seconds", dialect, h.Get("Retry-After"))
	}
	want := map[string]string{"x-ratelimit-limit-requests": "1", "x-ratelimit-remaining-requests": "0",
		"x-ratelimit-limit-tokens": "500000"}
	for name, v := range want {
		if got := h.Get(name); got != v {
			t.Errorf("%s: %s = %q, want %q", dialect, name, got, v)
		}
	}
	if n, err := strconv.ParseInt(h.Get("x-ratelimit-remaining-tokens"), 10, 64); err != nil || n <= 0 || n > 500000 {
		t.Errorf("%s: x-ratelimit-remaining-tokens %q", dialect, h.Get("x-ratelimit-remaining-tokens"))
	}
	for _, name := range []string{"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"} {
		if d, err := time.ParseDuration(h.Get(name)); err != nil || d < 0 {
			t.Errorf("%s: %s = %q, not a duration", dialect, name, h.Get(name))
		}
	}
}

// A 429 in the Anthropic and Ollama dialects carries Retry-After and the
// x-ratelimit-* headers, as OpenAI's does.
func TestAccounts_RateLimitHeadersInEachDialect(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	_, k := newUser(t, e.base, "kim", "staff", map[string]any{"rpm_limit_override": 1}, nil)
	ctx := context.Background()
	c := client(e, k.FullKey)
	if _, err := c.Chat.Completions.New(ctx, chatParams(vllmModel, "hi")); err != nil {
		t.Fatal(err)
	}

	ac := anthropicClient(e, false, k.FullKey)
	_, err := ac.Messages.New(ctx, anthropicParams(vllmModel, "hi"))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 429 || !strings.Contains(ae.RawJSON(), `"rate_limit_error"`) {
		t.Fatalf("Anthropic: %v, want 429 rate_limit_error", err)
	}
	checkRateHeaders(t, "Anthropic", ae.Response.Header)

	oc, tap := ollamaTapClient(t, e, k.FullKey)
	err = oc.Chat(ctx, &api.ChatRequest{Model: ollamaModel, Messages: []api.Message{{Role: "user", Content: "hi"}}},
		func(api.ChatResponse) error { return nil })
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != 429 {
		t.Fatalf("Ollama: %v, want 429", err)
	}
	checkRateHeaders(t, "Ollama", tap.header())
}

// A stream the token budget cuts ends cleanly in the Anthropic dialect
// (message_delta with stop_reason "max_tokens", then message_stop) and in
// Ollama's (done with done_reason "length"), within the budget.
func TestAccounts_BudgetCutStreamInEachDialect(t *testing.T) {
	t.Parallel()
	const budget = 300
	e := startEnv(t, fakellm.Config{Tokens: 2000, TPS: 5000}, fakellm.Config{Tokens: 2000, TPS: 5000}, "")
	over := map[string]any{"token_budget_override": budget, "rpm_limit_override": 100}
	ctx := context.Background()

	t.Run("anthropic", func(t *testing.T) {
		_, k := newUser(t, e.base, "lena", "staff", over, nil)
		p := anthropicParams(vllmModel, "Write a long essay about gateways.")
		p.MaxTokens = 1000                                               // more than the budget holds
		msg := streamMessage(t, anthropicClient(e, false, k.FullKey), p) // checks message_delta then message_stop
		if msg.StopReason != anthropic.StopReasonMaxTokens {
			t.Errorf("stop_reason %q, want max_tokens", msg.StopReason)
		}
		if used := msg.Usage.InputTokens + msg.Usage.OutputTokens; msg.Usage.OutputTokens == 0 || used > budget {
			t.Errorf("usage %+v: want some output and at most %d tokens in all", msg.Usage, budget)
		}
	})

	t.Run("ollama", func(t *testing.T) {
		_, k := newUser(t, e.base, "omar", "staff", over, nil)
		oc, _ := ollamaTapClient(t, e, k.FullKey)
		var last api.ChatResponse
		chunks := 0
		err := oc.Chat(ctx, &api.ChatRequest{Model: ollamaModel, // no num_predict: the default reservation applies
			Messages: []api.Message{{Role: "user", Content: "Write a long essay about gateways."}}},
			func(r api.ChatResponse) error { chunks++; last = r; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if !last.Done || last.DoneReason != "length" {
			t.Errorf("last chunk done %v done_reason %q, want true and length", last.Done, last.DoneReason)
		}
		if used := last.PromptEvalCount + last.EvalCount; chunks < 2 || last.EvalCount == 0 || used > budget {
			t.Errorf("%d chunks, prompt %d + eval %d tokens: want a stream within %d", chunks, last.PromptEvalCount, last.EvalCount, budget)
		}
	})
}

// The per-user cap on requests in flight holds over HTTP: a user with
// max_concurrent 2 sending 6 slow requests at once has at most 2 at the
// backend; the others are refused at once (429
// concurrency_limit_exceeded: the quota package refuses, it does not
// queue).
func TestAccounts_ConcurrencyCapOverHTTP(t *testing.T) {
	fl := startFleet(t, 1, fakellm.Config{TTFT: 500 * time.Millisecond, Tokens: 15, TPS: 10}, "")
	e := fl[0]
	_, k := newUser(t, e.base, "pia", "staff", map[string]any{"max_concurrent_override": 2, "rpm_limit_override": 1000}, nil)
	e.vllm.ResetPeak()
	const n = 6
	codes := make([]int, n)
	bodies := make([]string, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", e.base+"/v1/chat/completions",
				strings.NewReader(`{"model":"`+vllmModel+`","messages":[{"role":"user","content":"hi"}],"stream":true}`))
			req.Header.Set("Authorization", "Bearer "+k.FullKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes[i], bodies[i] = -1, err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			codes[i], bodies[i] = resp.StatusCode, string(b)
		}(i)
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	peak := e.vllm.Stats().PeakConcurrent
	t.Logf("%d parallel requests in %v: statuses %v, backend peak %d", n, time.Since(t0), codes, peak)
	ok, refused := 0, 0
	for i, c := range codes {
		switch {
		case c == 200:
			ok++
		case c == 429 && strings.Contains(bodies[i], `"concurrency_limit_exceeded"`):
			refused++
		default:
			t.Errorf("request %d: %d %s", i, c, bodies[i])
		}
	}
	if peak > 2 {
		t.Errorf("the backend saw %d of the user's requests at once, cap 2", peak)
	}
	// Each request takes over 2 s and all start within milliseconds, so
	// exactly the cap's worth run.
	if ok != 2 || refused != n-2 {
		t.Errorf("%d admitted and %d refused, want 2 and %d", ok, refused, n-2)
	}
	// The slots come back: the next request is admitted.
	c := client(e, k.FullKey)
	if _, err := c.Chat.Completions.New(context.Background(), chatParams(vllmModel, "hi")); err != nil {
		t.Errorf("after the burst: %v", err)
	}
}

// The config's nodes are written into the store at start (their sidecar
// key read from the environment, never shown) and handed to the registry;
// a node added through the admin API reaches the registry at its refresh.
func TestAccounts_ConfigNodes(t *testing.T) {
	const secret = "sk-config-node-secret"
	t.Setenv("MR_TEST_NODE_KEY", secret)
	// Discovery's own store sync is an hour away: only the refresh can
	// bring the second node in.
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, `discovery: {interval: 1h}
nodes:
  - {name: node-a, sidecar_url: "http://127.0.0.1:1", sidecar_key_env: MR_TEST_NODE_KEY}
`)
	if nodes := e.gw.Reg.Nodes(); len(nodes) != 1 || nodes[0].Name != "node-a" || nodes[0].Key != secret {
		t.Fatalf("registry nodes after start: %v", nodes)
	}
	var list []struct {
		ID            int64  `json:"id"`
		Name          string `json:"name"`
		SidecarKeySet bool   `json:"sidecar_key_set"`
		FromConfig    bool   `json:"from_config"`
	}
	if st := callAPI(t, e.base, adminKey, "GET", "/api/admin/nodes", nil, &list); st != 200 || len(list) != 1 ||
		list[0].Name != "node-a" || !list[0].SidecarKeySet || !list[0].FromConfig {
		t.Fatalf("GET /nodes: %d %+v", st, list)
	}

	var n2 struct {
		ID int64 `json:"id"`
	}
	if st := callAPI(t, e.base, adminKey, "POST", "/api/admin/nodes",
		map[string]any{"name": "node-b", "sidecar_url": "http://127.0.0.1:2", "sidecar_key": "sk-b"}, &n2); st != 200 {
		t.Fatalf("create node-b: %d", st)
	}
	if nodes := e.gw.Reg.Nodes(); len(nodes) != 1 {
		t.Fatalf("node-b reached the registry before its refresh: %v", nodes)
	}
	var r struct {
		Status  string `json:"status"`
		Applied *bool  `json:"applied"`
	}
	if st := callAPI(t, e.base, adminKey, "POST", fmt.Sprintf("/api/admin/nodes/%d/refresh", n2.ID), nil, &r); st != 200 ||
		r.Status != "refreshed" || r.Applied == nil || !*r.Applied {
		t.Fatalf("refresh: %d %+v", st, r)
	}
	if nodes := e.gw.Reg.Nodes(); len(nodes) != 2 {
		t.Fatalf("registry nodes after the refresh: %v", nodes)
	}
}

// syncBackends: a config backend naming a node gets its ID and GPUs; one
// naming none keeps an admin's placement and priority across restarts; an
// unknown node name is an error at start.
func TestAccounts_SyncBackendsNodes(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, "sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	ids, err := syncNodes(ctx, st, []config.Node{{Name: "n1", SidecarURL: "http://n1:8007", SidecarKey: "k1"}})
	if err != nil || ids["n1"] == 0 {
		t.Fatalf("syncNodes: %v %v", ids, err)
	}
	cfg := []config.Backend{
		{Name: "placed", Engine: "vllm", URL: "http://a", MaxConcurrent: 4, Node: "n1", GPUs: []int{2, 3}},
		{Name: "free", Engine: "vllm", URL: "http://b", MaxConcurrent: 4},
	}
	if _, err := syncBackends(ctx, st, cfg, ids); err != nil {
		t.Fatal(err)
	}
	byName := func() map[string]store.Backend {
		all, err := st.Backends(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]store.Backend{}
		for _, b := range all {
			m[b.Name] = b
		}
		return m
	}
	if p := byName()["placed"]; p.NodeID == nil || *p.NodeID != ids["n1"] || fmt.Sprint(p.GPUIndices) != "[2 3]" {
		t.Fatalf("placed backend: %+v", p)
	}
	// An admin places "free" and sets its priority; a restart keeps both.
	f := byName()["free"]
	nid := ids["n1"]
	f.NodeID, f.GPUIndices, f.Priority = &nid, []int{0}, 7
	if err := st.UpdateBackend(ctx, &f); err != nil {
		t.Fatal(err)
	}
	if _, err := syncBackends(ctx, st, cfg, ids); err != nil {
		t.Fatal(err)
	}
	if f := byName()["free"]; f.NodeID == nil || *f.NodeID != nid || fmt.Sprint(f.GPUIndices) != "[0]" || f.Priority != 7 {
		t.Errorf("after a restart the admin's placement is gone: %+v", f)
	}
	cfg[1].Node = "nowhere"
	if _, err := syncBackends(ctx, st, cfg, ids); err == nil || !strings.Contains(err.Error(), `node "nowhere"`) {
		t.Errorf("unknown node: %v", err)
	}
}

// quotaUsed is the user's tokens used as the admin API reports them.
func quotaUsed(t *testing.T, base string, uid int64) int64 {
	t.Helper()
	var rep struct {
		TokensUsed int64 `json:"tokens_used"`
	}
	if st := callAPI(t, base, adminKey, "GET", fmt.Sprintf("/api/admin/quotas/%d", uid), nil, &rep); st != 200 {
		t.Fatalf("quota usage: %d", st)
	}
	return rep.TokensUsed
}

// n choices cost n times the output: the budget reserves and caps every
// choice, so a request for many choices stays within the budget, streamed
// or not, with or without max_tokens.
func TestAccounts_BudgetCoversEveryChoice(t *testing.T) {
	t.Parallel()
	const budget = 3000
	e := startEnv(t, fakellm.Config{Tokens: 2000, TPS: 100_000}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		n         int64
		maxTokens int64 // 0: none
		stream    bool
	}{
		{"n 20 max_tokens 1000", 20, 1000, false},
		{"n 50 streamed without max_tokens", 50, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uid, k := newUser(t, e.base, "choices"+strconv.FormatInt(tc.n, 10), "staff",
				map[string]any{"token_budget_override": budget, "rpm_limit_override": 100}, nil)
			p := chatParams(vllmModel, "Write a long essay about gateways.")
			p.N = openai.Int(tc.n)
			if tc.maxTokens > 0 {
				p.MaxTokens = openai.Int(tc.maxTokens)
			}
			c := client(e, k.FullKey)
			var usage openai.CompletionUsage
			var choices int
			if tc.stream {
				p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				s := c.Chat.Completions.NewStreaming(ctx, p)
				var acc openai.ChatCompletionAccumulator
				for s.Next() {
					acc.AddChunk(s.Current())
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				usage, choices = acc.Usage, len(acc.Choices)
			} else {
				r, err := c.Chat.Completions.New(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				usage, choices = r.Usage, len(r.Choices)
			}
			if choices != int(tc.n) || usage.CompletionTokens < tc.n {
				t.Fatalf("%d choices, usage %+v: want %d choices with output each", choices, usage, tc.n)
			}
			if used := usage.PromptTokens + usage.CompletionTokens; used > budget {
				t.Errorf("the backend generated %d tokens (prompt %d, completion %d) on a budget of %d",
					used, usage.PromptTokens, usage.CompletionTokens, budget)
			}
			if got := quotaUsed(t, e.base, uid); got > budget {
				t.Errorf("charged %d tokens on a budget of %d", got, budget)
			}
		})
	}
}

// streamRaw sends a chat stream request and reads its SSE answer, counting
// the choice deltas with content; with stopAfter > 0 it hangs up after
// that many. It returns the request id and the deltas read.
func streamRaw(t *testing.T, base, key, body string, stopAfter int) (string, int) {
	t.Helper()
	req, err := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	id := resp.Header.Get("X-Request-ID")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	deltas := 0
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(line), &ch) != nil {
			continue // the error event of a broken stream
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != "" {
				deltas++
			}
		}
		if stopAfter > 0 && deltas >= stopAfter {
			return id, deltas // the deferred Close hangs up
		}
	}
	return id, deltas
}

// A stream that ends without the backend's usage — the backend drops it,
// the client hangs up — is charged and audited for what was decoded (about
// a token per delta, every choice's), the audit and the quota agreeing.
func TestAccounts_StreamWithoutUsageChargedAsDelivered(t *testing.T) {
	t.Parallel()
	drop := startEnv(t, fakellm.Config{DropRate: 1, Tokens: 400, TPS: 20_000}, fakellm.Config{}, "")
	slow := startEnv(t, fakellm.Config{Tokens: 5000, TPS: 2000}, fakellm.Config{}, "")
	for _, tc := range []struct {
		name      string
		e         *env
		n         int
		stopAfter int // the client hangs up after this many deltas (0: reads to the end)
	}{
		{"backend drops", drop, 1, 0},
		{"backend drops n 4", drop, 4, 0},
		{"client hangs up", slow, 1, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uid, k := newUser(t, tc.e.base, "nousage"+strconv.Itoa(tc.n)+strconv.Itoa(tc.stopAfter), "staff",
				map[string]any{"token_budget_override": 1_000_000, "rpm_limit_override": 100}, nil)
			body := fmt.Sprintf(`{"model":%q,"n":%d,"stream":true,"max_tokens":6000,"messages":[{"role":"user","content":"Write a long essay."}]}`,
				vllmModel, tc.n)
			id, got := streamRaw(t, tc.e.base, k.FullKey, body, tc.stopAfter)
			rec := waitAudit(t, tc.e.base, id, time.Now())
			used := quotaUsed(t, tc.e.base, uid)
			t.Logf("%d deltas read; audit %d prompt + %d completion; quota %d", got, rec.PromptTokens, rec.CompletionTokens, used)
			if int64(rec.PromptTokens+rec.CompletionTokens) != used {
				t.Errorf("audit says %d + %d tokens, the quota charged %d", rec.PromptTokens, rec.CompletionTokens, used)
			}
			if rec.PromptTokens == 0 {
				t.Errorf("audit records no prompt tokens")
			}
			switch {
			case tc.stopAfter == 0 && rec.CompletionTokens != got:
				t.Errorf("%d completion tokens recorded, %d delivered", rec.CompletionTokens, got)
			case tc.stopAfter > 0 && (rec.CompletionTokens < got || rec.CompletionTokens >= 5000):
				t.Errorf("%d completion tokens recorded: want at least the %d delivered, less than the 5000 a full answer has",
					rec.CompletionTokens, got)
			}
		})
	}
}
