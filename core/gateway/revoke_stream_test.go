package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// TestAccounts_RevokedKeyStopsStream: a stream in flight stops soon after
// its key is revoked or its user disabled (accounts.stream_recheck, 1 s
// by default), instead of running to its end: it ends with the dialect's
// error (an OpenAI error data event and no [DONE], Anthropic's event:
// error, an Ollama error line), and the audit records it as a 401.
func TestAccounts_RevokedKeyStopsStream(t *testing.T) {
	t.Parallel()
	// Long, slow answers: left alone each would run for minutes.
	slow := fakellm.Config{Tokens: 100_000, TPS: 200}
	e := startEnv(t, slow, slow, "")
	unlimited := map[string]any{"token_budget_override": 0, "rpm_limit_override": 1000}
	for i, tc := range []struct {
		name, path, body, wantTail string
		disableUser                bool
	}{
		{"openai revoke", "/v1/chat/completions",
			`{"model":"` + vllmModel + `","stream":true,"messages":[{"role":"user","content":"Write forever."}]}`, `"error"`, false},
		{"anthropic revoke", "/v1/messages",
			`{"model":"` + vllmModel + `","stream":true,"max_tokens":100000,"messages":[{"role":"user","content":"Write forever."}]}`, "event: error", false},
		{"ollama user disabled", "/api/chat",
			`{"model":"` + ollamaModel + `","messages":[{"role":"user","content":"Write forever."}]}`, `{"error"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uid, k := newUser(t, e.base, fmt.Sprintf("streamer%d", i), "staff", unlimited, nil)
			cut := func() {
				if tc.disableUser {
					if st := callAPI(t, e.base, adminKey, "PATCH", fmt.Sprintf("/api/admin/users/%d", uid), map[string]any{"is_active": false}, nil); st != 200 {
						t.Fatalf("disable user: %d", st)
					}
					return
				}
				if st := callAPI(t, e.base, adminKey, "POST", fmt.Sprintf("/api/admin/api-keys/%d/revoke", k.ID), nil, nil); st != 200 {
					t.Fatalf("revoke: %d", st)
				}
			}
			tail, reqID, took := streamThenCut(t, e.base+tc.path, k.FullKey, tc.body, cut)
			t.Logf("the stream ended %v after the cut; its end: %q", took, tail[max(len(tail)-300, 0):])
			if !strings.Contains(tail, tc.wantTail) || strings.Contains(tail, "[DONE]") {
				t.Errorf("the stream's end %q: want %q and no [DONE]", tail, tc.wantTail)
			}
			if !strings.Contains(tail, "revoked") {
				t.Errorf("the stream's end %q does not say why", tail)
			}
			if rec := waitAudit(t, e.base, reqID, time.Now()); rec.StatusCode != 401 {
				t.Errorf("audit status %d, want 401", rec.StatusCode)
			}
		})
	}
}

// streamThenCut starts a stream as key, calls cut once some of it has
// arrived, and reads to its end: the last bytes, the request id and how
// long after cut it ended. A stream still running 20 s after the cut
// fails the test (the answer would run for minutes).
func streamThenCut(t *testing.T, url, key, body string, cut func()) (string, string, time.Duration) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	reqID := resp.Header.Get("X-Request-ID")
	r := bufio.NewReader(resp.Body)
	got := 0
	for got < 2048 { // some of the answer first
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before the cut: %v", err)
		}
		got += len(line)
	}
	cut()
	start := time.Now()
	hang := time.AfterFunc(20*time.Second, func() { resp.Body.Close() })
	defer hang.Stop()
	var tail []byte
	buf := make([]byte, 8<<10)
	for {
		n, err := r.Read(buf)
		tail = append(tail, buf[:n]...)
		if len(tail) > 4096 {
			tail = tail[len(tail)-4096:]
		}
		if err != nil {
			if time.Since(start) >= 20*time.Second {
				t.Fatalf("the stream still ran 20s after the cut")
			}
			break
		}
	}
	return string(tail), reqID, time.Since(start)
}

// TestAccounts_MintedKeyBoundByItsMinter: a key made with a one-hour key
// through /api/me/api-keys expires within that hour (a later expiry is a
// 400); disabling the user stops both keys, enabling it brings both back.
func TestAccounts_MintedKeyBoundByItsMinter(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	uid, _ := newUser(t, e.base, "mina", "students", nil, nil)
	hour := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	var short newKey
	if st := callAPI(t, e.base, adminKey, "POST", fmt.Sprintf("/api/admin/users/%d/api-keys", uid),
		map[string]any{"name": "hour", "expires_at": hour.Format(time.RFC3339)}, &short); st != 200 {
		t.Fatalf("one-hour key: %d", st)
	}
	var minted struct {
		newKey
		ExpiresAt time.Time `json:"expires_at"`
	}
	if st := callAPI(t, e.base, short.FullKey, "POST", "/api/me/api-keys", map[string]any{"name": "minted"}, &minted); st != 200 {
		t.Fatalf("mint: %d", st)
	}
	if minted.ExpiresAt.After(hour) {
		t.Errorf("the minted key expires at %v, after its minter (%v)", minted.ExpiresAt, hour)
	}
	if st := callAPI(t, e.base, short.FullKey, "POST", "/api/me/api-keys",
		map[string]any{"name": "long", "expires_at": time.Now().Add(30 * 24 * time.Hour).Format(time.RFC3339)}, nil); st != 400 {
		t.Errorf("a 30-day key from a one-hour key: %d, want 400", st)
	}
	models := func(key string) int {
		c := client(e, key)
		_, err := c.Models.List(context.Background())
		return statusOf(err)
	}
	setActive := func(on bool) {
		if st := callAPI(t, e.base, adminKey, "PATCH", fmt.Sprintf("/api/admin/users/%d", uid), map[string]any{"is_active": on}, nil); st != 200 {
			t.Fatalf("is_active %v: %d", on, st)
		}
	}
	setActive(false)
	for _, k := range []string{short.FullKey, minted.FullKey} {
		if st := models(k); st != 401 {
			t.Errorf("a key of a disabled user: %d, want 401", st)
		}
	}
	setActive(true)
	for _, k := range []string{short.FullKey, minted.FullKey} {
		if st := models(k); st != 200 {
			t.Errorf("a key of a re-enabled user: %d, want 200", st)
		}
	}
}
