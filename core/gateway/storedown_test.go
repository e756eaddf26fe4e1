package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// TestAccounts_StoreDown: MariaDB unreachable for longer than the key
// cache. A key verified before keeps working (stale-if-error, while
// revocations still arrive through Redis); a Responses request that would
// store its answer is refused with 503 and Retry-After before anything is
// generated, one that stores nothing is served; the admin API answers 503
// with Retry-After; everything works again once the store is back.
func TestAccounts_StoreDown(t *testing.T) {
	t.Parallel()
	db := testsvc.StartMariaDB(t)
	px := testsvc.StartProxy(t, db.Addr)
	rd := testsvc.StartRedis(t)
	y := fmt.Sprintf("store: {driver: mysql, dsn: %q}\n%saccounts: {key_cache_ttl: 1s, stale_if_error: 5m}\n",
		db.DSNVia(px), redisYAML(rd))
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, y)
	_, k := newUser(t, e.base, "dora", "staff", map[string]any{"token_budget_override": 0, "rpm_limit_override": 1000}, nil)
	chat := `{"model":"` + vllmModel + `","messages":[{"role":"user","content":"hi"}]}`
	stored := `{"model":"` + vllmModel + `","input":"hi"}`
	unstored := `{"model":"` + vllmModel + `","input":"hi","store":false}`
	if st, _, _ := rawPost(t, e.base+"/v1/chat/completions", k.FullKey, chat); st != 200 {
		t.Fatalf("chat before the outage: %d", st)
	}

	px.Cut()
	// Past the key cache's second: each answer now comes from the
	// stale-if-error window (the store is asked and fails).
	deadline := time.Now().Add(2500 * time.Millisecond)
	for n := 0; time.Now().Before(deadline); n++ {
		if st, _, v := rawPost(t, e.base+"/v1/chat/completions", k.FullKey, chat); st != 200 {
			t.Fatalf("chat %d with the store down: %d %v", n, st, v)
		}
		time.Sleep(100 * time.Millisecond) // pacing, not a timing assertion
	}
	testutil.WaitFor(t, "a stored response refused", 10*time.Second, func() bool {
		st, hdr, _ := rawPost(t, e.base+"/v1/responses", k.FullKey, stored)
		return st == 503 && hdr.Get("Retry-After") != ""
	})
	if st, _, v := rawPost(t, e.base+"/v1/responses", k.FullKey, unstored); st != 200 {
		t.Errorf("store:false with the store down: %d %v", st, v)
	}
	req, _ := http.NewRequest("GET", e.base+"/api/admin/users", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "unavailable") {
		t.Errorf("admin API with the store down: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}

	px.Restore(t)
	testutil.WaitFor(t, "a stored response served", 10*time.Second, func() bool {
		st, _, _ := rawPost(t, e.base+"/v1/responses", k.FullKey, stored)
		return st == 200
	})
	if st := callAPI(t, e.base, adminKey, "GET", "/api/admin/users", nil, nil); st != 200 {
		t.Errorf("admin API with the store back: %d", st)
	}
}
