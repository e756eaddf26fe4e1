package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/accounts"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// fleet is several gateways sharing one store and one Redis, each in front
// of its own pair of fakellm backends (same models).
func startFleet(t *testing.T, n int, fv fakellm.Config, extraYAML string) []*env {
	t.Helper()
	db := testsvc.StartMariaDB(t)
	rd := testsvc.StartRedis(t)
	y := fmt.Sprintf("store: {driver: mysql, dsn: %q}\n%s%s", db.DSN, redisYAML(rd), extraYAML)
	var out []*env
	for i := 0; i < n; i++ {
		out = append(out, startEnv(t, fv, fakellm.Config{}, y))
	}
	return out
}

// callAPI calls the account or admin API with key and decodes the JSON answer
// into out (when not nil).
func callAPI(t testing.TB, base, key, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	if resp.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode
}

type newKey struct {
	ID      int64  `json:"id"`
	FullKey string `json:"full_key"`
}

// newUser creates a user in group with the given overrides and one key
// with scopes (nil: inference), through the admin API.
func newUser(t testing.TB, base, name, group string, overrides map[string]any, scopes []string) (int64, newKey) {
	t.Helper()
	body := map[string]any{"username": name, "email": name + "@example.edu", "group": group}
	for k, v := range overrides {
		body[k] = v
	}
	var u struct {
		ID int64 `json:"id"`
	}
	if st := callAPI(t, base, adminKey, "POST", "/api/admin/users", body, &u); st != 200 && st != 201 {
		t.Fatalf("create user %s: %d", name, st)
	}
	kb := map[string]any{"name": name + "-key"}
	if scopes != nil {
		kb["scopes"] = scopes
	}
	var k newKey
	if st := callAPI(t, base, adminKey, "POST", fmt.Sprintf("/api/admin/users/%d/api-keys", u.ID), kb, &k); st != 200 && st != 201 {
		t.Fatalf("create key for %s: %d", name, st)
	}
	if !strings.HasPrefix(k.FullKey, "mr2_") || len(k.FullKey) != 47 {
		t.Fatalf("key %q is not mr2_ + 43 characters", k.FullKey)
	}
	return u.ID, k
}

func client(e *env, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(e.base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func statusOf(err error) int {
	var ae *openai.Error
	if errors.As(err, &ae) {
		return ae.StatusCode
	}
	if err == nil {
		return 200
	}
	return -1
}

// A key made on one replica works on the other; its revocation stops it
// on every replica within a second (Redis pub/sub), answered 401 in the
// client's dialect; a key without the inference scope gets 403.
func TestAccounts_KeyLifecycleAcrossReplicas(t *testing.T) {
	fl := startFleet(t, 2, fakellm.Config{}, "")
	a, b := fl[0], fl[1]
	ctx := context.Background()
	_, k := newUser(t, a.base, "alice", "students", nil, nil)

	var hdr http.Header
	cb := client(b, k.FullKey)
	resp, err := cb.Chat.Completions.New(ctx, chatParams(vllmModel, "hi"),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			res, err := next(r)
			if res != nil {
				hdr = res.Header
			}
			return res, err
		}))
	if err != nil || resp.Choices[0].Message.Content == "" {
		t.Fatalf("alice on replica B: %v", err)
	}
	// students: RPM 30 (the seeded default) — the OpenAI headers say so.
	if hdr.Get("x-ratelimit-limit-requests") == "" || hdr.Get("x-ratelimit-remaining-tokens") == "" {
		t.Errorf("rate-limit headers missing: %v", hdr)
	}
	var me struct {
		Username string `json:"username"`
	}
	if st := callAPI(t, b.base, k.FullKey, "GET", "/api/me", nil, &me); st != 200 || me.Username != "alice" {
		t.Fatalf("/api/me: %d %+v", st, me)
	}
	// A student may not use the admin API.
	if st := callAPI(t, b.base, k.FullKey, "GET", "/api/admin/users", nil, nil); st != 403 {
		t.Errorf("student on the admin API: %d, want 403", st)
	}

	if st := callAPI(t, a.base, adminKey, "POST", fmt.Sprintf("/api/admin/api-keys/%d/revoke", k.ID), nil, nil); st != 200 {
		t.Fatalf("revoke: %d", st)
	}
	revoked := time.Now()
	var took time.Duration
	for {
		_, err := cb.Models.List(ctx)
		if statusOf(err) == 401 {
			took = time.Since(revoked)
			break
		}
		if time.Since(revoked) > 5*time.Second {
			t.Fatalf("revoked key still accepted by replica B after 5s: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("revocation reached replica B in %v", took)
	if took > time.Second {
		t.Errorf("revocation took %v on the other replica, want <= 1s", took)
	}
	// 401 in Anthropic's dialect too.
	ac := anthropicClient(b, false, k.FullKey)
	_, err = ac.Messages.New(ctx, anthropicParams(vllmModel, "hi"))
	var aerr *anthropic.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != 401 || !strings.Contains(aerr.RawJSON(), `"authentication_error"`) {
		t.Errorf("anthropic 401: %v", err)
	}

	// A key without the inference scope: 403 permission error.
	_, ak := newUser(t, a.base, "ops", "admin", nil, []string{"admin"})
	ca := client(a, ak.FullKey)
	_, err = ca.Chat.Completions.New(ctx, chatParams(vllmModel, "hi"))
	if statusOf(err) != 403 {
		t.Errorf("admin-only key on chat: %v, want 403", err)
	}
	if st := callAPI(t, a.base, ak.FullKey, "GET", "/api/admin/users", nil, nil); st != 200 {
		t.Errorf("admin-only key on the admin API: %d", st)
	}
}

// Acceptance: a user with RPM 60 gets at most 60 successes in a minute
// across two replicas; the refusals are 429 with Retry-After and the
// OpenAI rate-limit headers.
func TestAccounts_RPMAcrossReplicas(t *testing.T) {
	fl := startFleet(t, 2, fakellm.Config{}, "")
	uid, k := newUser(t, fl[0].base, "bob", "staff", map[string]any{"rpm_limit_override": 60, "max_concurrent_override": 100}, nil)
	_ = uid
	var ok, limited, other atomic.Int64
	var bad atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 10; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				e := fl[(w+i)%2]
				req, _ := http.NewRequest("POST", e.base+"/v1/chat/completions",
					strings.NewReader(`{"model":"`+vllmModel+`","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`))
				req.Header.Set("Authorization", "Bearer "+k.FullKey)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					other.Add(1)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case 200:
					ok.Add(1)
				case 429:
					limited.Add(1)
					if resp.Header.Get("Retry-After") == "" || resp.Header.Get("x-ratelimit-remaining-requests") != "0" ||
						resp.Header.Get("x-ratelimit-limit-requests") != "60" || !bytes.Contains(body, []byte(`"rate_limit_exceeded"`)) {
						bad.Store(fmt.Sprintf("429 without its headers or code: %v %s", resp.Header, body))
					}
				default:
					other.Add(1)
					bad.Store(fmt.Sprintf("status %d: %s", resp.StatusCode, body))
				}
			}
		}(w)
	}
	wg.Wait()
	t.Logf("100 requests in %v over two replicas: %d admitted, %d refused", time.Since(start), ok.Load(), limited.Load())
	if time.Since(start) > 55*time.Second {
		t.Fatalf("the burst took %v: the window check below needs it inside a minute", time.Since(start))
	}
	if v := bad.Load(); v != nil {
		t.Error(v)
	}
	if ok.Load() > 60 || other.Load() != 0 {
		t.Fatalf("admitted %d (limit 60), other outcomes %d", ok.Load(), other.Load())
	}
	// Leases may strand a few permits on one replica; most must be used.
	if ok.Load() < 50 {
		t.Errorf("admitted only %d of a limit of 60", ok.Load())
	}
}

// Acceptance: a 10,000-token budget under 50 concurrent streams on two
// replicas is not exceeded beyond the documented bound (the input
// estimate's error); streams the budget cuts end cleanly with the finish
// reason "length".
func TestAccounts_BudgetUnderConcurrentStreams(t *testing.T) {
	fl := startFleet(t, 2, fakellm.Config{Tokens: 2000, TPS: 2000}, "")
	uid, k := newUser(t, fl[0].base, "carol", "staff", map[string]any{"token_budget_override": 10000, "rpm_limit_override": 1000,
		"max_concurrent_override": 100}, nil)
	ctx := context.Background()
	var used, admitted, refused, cut atomic.Int64
	var bad atomic.Value
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p := chatParams(vllmModel, "Write a long essay about gateways.")
			if i%2 == 0 {
				p.MaxTokens = openai.Int(800)
			} // odd: no max_tokens, the default reservation applies
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			c := client(fl[i%2], k.FullKey)
			s := c.Chat.Completions.NewStreaming(ctx, p)
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				if statusOf(err) == 429 {
					refused.Add(1)
					return
				}
				bad.Store(err.Error())
				return
			}
			admitted.Add(1)
			used.Add(acc.Usage.PromptTokens + acc.Usage.CompletionTokens)
			if len(acc.Choices) == 1 && acc.Choices[0].FinishReason == "length" {
				cut.Add(1)
			}
		}(i)
	}
	wg.Wait()
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
	t.Logf("50 streams: %d admitted (%d cut by the budget), %d refused; %d tokens used of 10000", admitted.Load(), cut.Load(), refused.Load(), used.Load())
	if used.Load() > 10000 {
		t.Errorf("the streams used %d tokens of a 10,000 budget", used.Load())
	}
	if admitted.Load() == 0 || refused.Load() == 0 || cut.Load() == 0 {
		t.Errorf("expected some streams served, some cut and some refused")
	}
	// The fleet's account agrees with what the clients were told, once
	// each replica pushed its settlements (every quota.lease).
	var rep struct {
		TokensUsed int64 `json:"tokens_used"`
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if st := callAPI(t, fl[1].base, adminKey, "GET", fmt.Sprintf("/api/admin/quotas/%d", uid), nil, &rep); st != 200 {
			t.Fatalf("quota usage: %d", st)
		}
		if rep.TokensUsed == used.Load() || time.Now().After(deadline) {
			break
		}
	}
	if rep.TokensUsed != used.Load() {
		t.Errorf("quota says %d tokens used, the streams reported %d", rep.TokensUsed, used.Load())
	}
}

// redisYAML is the gateway config's redis section for r.
func redisYAML(r *testsvc.Redis) string {
	return fmt.Sprintf("redis: {addr: %q, db: %d}\n", r.Addr, r.DB)
}

// Redis going away never turns into a 500 or a hang: with the default
// quota.redis_down "local", each replica goes on enforcing on its own.
func TestAccounts_RedisDown(t *testing.T) {
	db := testsvc.StartMariaDB(t)
	rd := testsvc.StartPrivateRedis(t) // stopped
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, fmt.Sprintf("store: {driver: mysql, dsn: %q}\nredis: {addr: %q, timeout: 200ms}\n", db.DSN, rd.Addr))
	_, k := newUser(t, e.base, "dave", "staff", map[string]any{"rpm_limit_override": 5}, nil)
	c := client(e, k.FullKey)
	ctx := context.Background()
	if _, err := c.Chat.Completions.New(ctx, chatParams(vllmModel, "hi")); err != nil {
		t.Fatal(err)
	}
	rd.Stop()
	codes := map[int]int{}
	for i := 0; i < 8; i++ {
		t0 := time.Now()
		_, err := c.Chat.Completions.New(ctx, chatParams(vllmModel, "hi"))
		codes[statusOf(err)]++
		if d := time.Since(t0); d > 3*time.Second {
			t.Fatalf("request %d took %v with Redis down", i, d)
		}
	}
	t.Logf("with Redis down: %v", codes)
	if codes[200] == 0 || codes[429] == 0 || codes[200]+codes[429] != 8 {
		t.Errorf("want successes then 429s from the local limit (RPM 5), got %v", codes)
	}
}

// make run's embedded store: users, keys and spent budget survive a
// restart without MySQL or Redis.
func TestAccounts_EmbeddedStoreSurvivesRestart(t *testing.T) {
	t.Parallel()
	dsn := filepath.Join(t.TempDir(), "mindrouter.db")
	y := fmt.Sprintf("store: {driver: sqlite, dsn: %q}\nquota: {persist_interval: 1s}\n", dsn)
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, y)
	uid, k := newUser(t, e.base, "erin", "students", nil, nil)
	ctx := context.Background()
	c := client(e, k.FullKey)
	resp, err := c.Chat.Completions.New(ctx, chatParams(vllmModel, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	spent := resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.gw.Close(cctx); err != nil {
		t.Fatal(err)
	}
	e2 := startEnv(t, fakellm.Config{}, fakellm.Config{}, y)
	c2 := client(e2, k.FullKey)
	if _, err := c2.Chat.Completions.New(ctx, chatParams(vllmModel, "hi")); err != nil {
		t.Fatalf("the key after a restart: %v", err)
	}
	var rep struct {
		TokensUsed     int64 `json:"tokens_used"`
		LifetimeTokens int64 `json:"lifetime_tokens"`
	}
	if st := callAPI(t, e2.base, adminKey, "GET", fmt.Sprintf("/api/admin/quotas/%d", uid), nil, &rep); st != 200 {
		t.Fatalf("quota: %d", st)
	}
	if rep.TokensUsed < spent || rep.LifetimeTokens < spent {
		t.Errorf("after restart: used %d lifetime %d, want >= %d", rep.TokensUsed, rep.LifetimeTokens, spent)
	}
}

// A key imported from the reference implementation (its prefix and
// Argon2id hash) authenticates; another key with the same prefix does not.
func TestAccounts_ImportedArgon2Key(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	uid, _ := newUser(t, e.base, "frank", "staff", nil, nil)
	key, _, _, err := accounts.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	phc, err := accounts.HashArgon2id(key)
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"name": "from-reference", "key_prefix": key[:accounts.PrefixLen], "key_hash": phc}
	var kv struct {
		Imported bool `json:"imported"`
	}
	if st := callAPI(t, e.base, adminKey, "POST", fmt.Sprintf("/api/admin/users/%d/api-keys/import", uid), body, &kv); st != 200 && st != 201 || !kv.Imported {
		t.Fatalf("import: %d %+v", st, kv)
	}
	ctx := context.Background()
	c := client(e, key)
	if _, err := c.Chat.Completions.New(ctx, chatParams(vllmModel, "hi")); err != nil {
		t.Fatalf("imported key: %v", err)
	}
	forged := key[:accounts.PrefixLen] + strings.Repeat("x", accounts.KeyLen-accounts.PrefixLen)
	cf := client(e, forged)
	if _, err := cf.Chat.Completions.New(ctx, chatParams(vllmModel, "hi")); statusOf(err) != 401 {
		t.Errorf("a forged key with the imported key's prefix: %v, want 401", err)
	}
	bad := map[string]any{"name": "x", "key_prefix": key[:accounts.PrefixLen], "key_hash": "$argon2id$nope"}
	if st := callAPI(t, e.base, adminKey, "POST", fmt.Sprintf("/api/admin/users/%d/api-keys/import", uid), bad, nil); st != 400 {
		t.Errorf("malformed hash: %d, want 400", st)
	}
}

// A refusal comes in each client's dialect: OpenAI's 429 error object,
// Anthropic's rate_limit_error, Ollama's {"error": …} — with Retry-After.
func TestAccounts_RateLimitInEachDialect(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	_, k := newUser(t, e.base, "jun", "staff", map[string]any{"rpm_limit_override": 1}, nil)
	ctx := context.Background()
	c := client(e, k.FullKey)
	if _, err := c.Chat.Completions.New(ctx, chatParams(vllmModel, "hi")); err != nil {
		t.Fatal(err)
	}
	_, err := c.Chat.Completions.New(ctx, chatParams(vllmModel, "hi"))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 429 || oe.Code != "rate_limit_exceeded" || oe.Response.Header.Get("Retry-After") == "" {
		t.Errorf("OpenAI: %v", err)
	}
	ac := anthropicClient(e, false, k.FullKey)
	_, err = ac.Messages.New(ctx, anthropicParams(vllmModel, "hi"))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 429 || !strings.Contains(ae.RawJSON(), `"rate_limit_error"`) {
		t.Errorf("Anthropic: %v", err)
	}
	u, _ := url.Parse(e.base)
	oc := api.NewClient(u, &http.Client{Transport: bearer{k.FullKey}})
	err = oc.Chat(ctx, &api.ChatRequest{Model: ollamaModel, Messages: []api.Message{{Role: "user", Content: "hi"}}}, func(api.ChatResponse) error { return nil })
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != 429 || !strings.Contains(se.ErrorMessage, "requests per minute") {
		t.Errorf("Ollama: %v", err)
	}
}
