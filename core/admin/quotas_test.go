package admin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
)

func TestQuotas_UsageAndReset(t *testing.T) {
	e := newEnv(t)
	e.quotas.used = 77
	r := e.ok(e.auditorKey, "GET", fmt.Sprintf("/api/admin/quotas/%d", e.bob.ID), nil)
	if num(r["tokens_used"]) != 77 || num(r["user_id"]) != e.bob.ID {
		t.Fatalf("usage: %v", r)
	}
	x := e.ok(e.adminKey, "POST", fmt.Sprintf("/api/admin/quotas/%d/reset", e.bob.ID), nil)
	if x["status"] != "reset" || !slices.Equal(e.quotas.resets, []int64{e.bob.ID}) {
		t.Fatalf("reset: %v %v", x, e.quotas.resets)
	}
	if ev := e.lastEvent(); ev.Action != "quota.reset" || ev.TargetType != "quota" || ev.TargetID != fmt.Sprint(e.bob.ID) {
		t.Errorf("event %+v", ev)
	}
	e.fail(e.adminKey, "GET", "/api/admin/quotas/31337", nil, 404)
	e.fail(e.adminKey, "POST", "/api/admin/quotas/31337/reset", nil, 404)
}

func TestQuotas_RedisDown(t *testing.T) {
	e := newEnv(t)
	e.quotas.down = true
	if d := e.fail(e.adminKey, "GET", fmt.Sprintf("/api/admin/quotas/%d", e.bob.ID), nil, 503); !strings.Contains(d, "Redis is down") {
		t.Errorf("usage: %q", d)
	}
	u := e.ok(e.adminKey, "GET", fmt.Sprintf("/api/admin/users/%d", e.bob.ID), nil)
	if u["quota"] != nil || !strings.Contains(fmt.Sprint(u["quota_error"]), "Redis is down") || u["user"].(map[string]any)["username"] != "bob" {
		t.Errorf("user detail while Redis is down: %v", u)
	}
	e.fail(e.bobKey, "GET", "/api/me/usage", nil, 503)
	if d := e.fail(e.adminKey, "POST", fmt.Sprintf("/api/admin/quotas/%d/reset", e.bob.ID), nil, 503); !strings.Contains(d, "store only") {
		t.Errorf("reset: %q", d)
	}
	if ev := e.lastEvent(); ev.Action != "quota.reset" || !strings.Contains(ev.Detail, "redis down") {
		t.Errorf("a partial reset is recorded as such: %+v", ev)
	}
}

// Without a quota limiter (the CLI without Redis) usage is the store's row.
func TestQuotas_StoreRow(t *testing.T) { quotaStoreRow(t, newEnv(t, envOpts{noQuotas: true})) }

func quotaStoreRow(t *testing.T, e *env) {
	ctx := context.Background()
	l := EffectiveLimits(e.bob, e.groups["students"])
	start := periodStart(l, time.Now())
	if err := e.st.SaveUsage(ctx, []store.Usage{{UserID: e.bob.ID, PeriodStart: start, TokensUsed: 500, LifetimeTokens: 9000, UpdatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	r := e.ok(e.adminKey, "GET", fmt.Sprintf("/api/admin/quotas/%d", e.bob.ID), nil)
	if num(r["tokens_used"]) != 500 || num(r["lifetime_tokens"]) != 9000 || num(r["token_budget"]) != l.TokenBudget {
		t.Fatalf("usage from the store: %v", r)
	}
	e.ok(e.adminKey, "POST", fmt.Sprintf("/api/admin/quotas/%d/reset", e.bob.ID), nil)
	u, err := e.st.Usage(ctx, e.bob.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.TokensUsed != 0 || u.LifetimeTokens != 9000 || !u.PeriodStart.Equal(start) {
		t.Errorf("after reset: %+v (want 0 used, lifetime kept)", u)
	}
	// Tokens of an earlier period do not count in this one.
	if err := e.st.SaveUsage(ctx, []store.Usage{{UserID: e.bob.ID, PeriodStart: start.Add(-l.BudgetPeriod), TokensUsed: 42, LifetimeTokens: 9000, UpdatedAt: time.Now().Add(time.Second)}}); err != nil {
		t.Fatal(err)
	}
	if r := e.ok(e.adminKey, "GET", fmt.Sprintf("/api/admin/quotas/%d", e.bob.ID), nil); num(r["tokens_used"]) != 0 {
		t.Errorf("an old period's tokens counted: %v", r)
	}
}

func TestAudit_AdminLog(t *testing.T) { auditLog(t, newEnv(t)) }

func auditLog(t *testing.T, e *env) {
	for i := range 3 {
		e.ok(e.adminKey, "POST", "/api/admin/groups", map[string]any{"name": fmt.Sprint("g", i)})
	}
	r := e.ok(e.auditorKey, "GET", "/api/admin/audit/admin?limit=2", nil)
	evs := r["events"].([]any)
	if len(evs) != 2 {
		t.Fatalf("events: %v", r)
	}
	first := evs[0].(map[string]any)
	if first["action"] != "group.create" || first["entity_type"] != "group" || num(first["user_id"]) != e.admin.ID || first["ip_address"] == "" {
		t.Errorf("newest event: %v", first)
	}
	// The detail is JSON, not a string holding JSON.
	if d, ok := first["detail"].(map[string]any); !ok || d["after"].(map[string]any)["name"] != "g2" {
		t.Errorf("detail: %v", first["detail"])
	}
	r = e.ok(e.auditorKey, "GET", "/api/admin/audit/admin?skip=2&limit=1", nil)
	if ev := r["events"].([]any)[0].(map[string]any); ev["detail"].(map[string]any)["after"].(map[string]any)["name"] != "g0" {
		t.Errorf("paging: %v", r)
	}
}
