package admin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/accounts"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

func TestMe_ProfileUsageAndKeys(t *testing.T) { meKeys(t, newEnv(t)) }

func meKeys(t *testing.T, e *env) {
	g := e.groups["students"]
	me := e.ok(e.aliceKey, "GET", "/api/me", nil)
	lim := me["limits"].(map[string]any)
	if num(me["user_id"]) != e.alice.ID || me["username"] != "alice" || me["group"] != "students" || me["is_admin"] != false ||
		num(lim["token_budget"]) != g.TokenBudget || num(lim["rpm_limit"]) != int64(g.RPM) || num(lim["max_api_keys"]) != int64(g.MaxKeys) {
		t.Fatalf("/api/me: %v", me)
	}
	if s := me["scopes"].([]any); len(s) != 1 || s[0] != "inference" {
		t.Errorf("scopes %v", s)
	}

	e.quotas.used = 1234
	u := e.ok(e.aliceKey, "GET", "/api/me/usage", nil)
	if num(u["user_id"]) != e.alice.ID || num(u["tokens_used"]) != 1234 || num(u["token_budget"]) != g.TokenBudget {
		t.Fatalf("/api/me/usage: %v", u)
	}
	if l := e.quotas.limits[e.alice.ID]; l.BudgetPeriod != time.Duration(g.BudgetPeriodDays)*24*time.Hour || !l.PeriodAnchor.Equal(e.alice.CreatedAt) {
		t.Errorf("limits asked: %+v", l)
	}

	m := e.newKey(e.aliceKey, "/api/me/api-keys", map[string]any{"name": "mine"})
	if num(m["user_id"]) != e.alice.ID {
		t.Fatalf("own key: %v", m)
	}
	if ev := e.lastEvent(); ev.Action != "key.create" || ev.ActorID != e.alice.ID || !strings.Contains(ev.Detail, `"self":true`) {
		t.Errorf("audit of a self-issued key: %+v", ev)
	}
	list := e.ok(e.aliceKey, "GET", "/api/me/api-keys", nil)
	if n := len(list["api_keys"].([]any)); n != 2 {
		t.Fatalf("own keys: %d, want 2: %v", n, list)
	}
	for _, k := range list["api_keys"].([]any) {
		if num(k.(map[string]any)["user_id"]) != e.alice.ID {
			t.Errorf("another user's key listed: %v", k)
		}
	}

	// Another user's key is "not found", like an unknown one.
	bobKey := e.mustKeyID(e.bob.ID)
	e.fail(e.aliceKey, "POST", fmt.Sprintf("/api/me/api-keys/%d/revoke", bobKey), nil, 404)
	e.fail(e.aliceKey, "POST", "/api/me/api-keys/999999/revoke", nil, 404)
	if k, _ := e.st.Key(context.Background(), bobKey); k.Status != "active" {
		t.Fatal("alice revoked bob's key")
	}
	r := e.ok(e.aliceKey, "POST", fmt.Sprintf("/api/me/api-keys/%d/revoke", num(m["id"])), nil)
	if r["status"] != "revoked" {
		t.Fatalf("own revoke: %v", r)
	}
	e.fail(m["full_key"].(string), "GET", "/api/me", nil, 401)
}

func TestMe_KeyLimits(t *testing.T) {
	e := newEnv(t)
	g := e.groups["students"]
	cases := []struct {
		name   string
		key    string
		body   any
		status int
		detail string
	}{
		{"student asks admin scope", e.aliceKey, map[string]any{"name": "x", "scopes": []string{"inference", "admin"}}, 400, "does not allow the admin scope"},
		{"auditor asks audit scope", e.auditorKey, map[string]any{"name": "x", "scopes": []string{"audit"}}, 403, "only administrators"},
		{"never-expiring key", e.aliceKey, map[string]any{"name": "x", "expires_at": nil}, 400, "expire within"},
		{"expiry past the group's", e.aliceKey, map[string]any{"name": "x", "expires_at": time.Now().Add(time.Duration(g.KeyExpiryDays+2) * 24 * time.Hour).UTC().Format(time.RFC3339)}, 400, "expire within"},
	}
	if g.KeyExpiryDays == 0 {
		t.Fatalf("seeded students group has no key expiry; the expiry cases need one")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := e.fail(tc.key, "POST", "/api/me/api-keys", tc.body, tc.status); !strings.Contains(d, tc.detail) {
				t.Errorf("detail %q, want %q", d, tc.detail)
			}
		})
	}
	// An admin may give their own key the admin scope, but an inference-only
	// key of an admin cannot mint a stronger one.
	e.newKey(e.adminKey, "/api/me/api-keys", map[string]any{"name": "ops", "scopes": []string{"admin"}})
	weak := e.newKey(e.adminKey, "/api/me/api-keys", map[string]any{"name": "weak"})
	if d := e.fail(weak["full_key"].(string), "POST", "/api/me/api-keys", map[string]any{"name": "x", "scopes": []string{"admin"}}, 403); !strings.Contains(d, "scopes") {
		t.Errorf("detail %q", d)
	}
	// max_keys holds for self-service too.
	g.MaxKeys = 1
	if err := e.st.UpdateGroup(context.Background(), &g); err != nil {
		t.Fatal(err)
	}
	e.fail(e.bobKey, "POST", "/api/me/api-keys", map[string]any{"name": "second"}, 409)
}

func TestMe_BootstrapKey(t *testing.T) {
	e := newEnv(t)
	// The bootstrap admin key has no store user behind it.
	p := auth.Principal{KeyID: "admin:abcd…", User: "admin", Group: "admin", Scopes: auth.ScopeInference | auth.ScopeAdmin | auth.ScopeAudit, Admin: true}
	status, body := e.h.Do(context.Background(), &p, Request{Method: "GET", Path: "/api/me"})
	if status != 200 || !strings.Contains(string(body), `"username":"admin"`) {
		t.Fatalf("/api/me for the bootstrap key: %d %s", status, body)
	}
	for _, r := range []Request{{Method: "GET", Path: "/api/me/usage"}, {Method: "GET", Path: "/api/me/api-keys"}, {Method: "POST", Path: "/api/me/api-keys", Body: []byte(`{"name":"x"}`)}} {
		if status, body := e.h.Do(context.Background(), &p, r); status != 404 || !strings.Contains(string(body), "bootstrap") {
			t.Errorf("%s %s: %d %s", r.Method, r.Path, status, body)
		}
	}
	// It administers, recorded with ActorID 0 and its key id.
	status, body = e.h.Do(context.Background(), &p, Request{Method: "POST", Path: "/api/admin/groups", Body: []byte(`{"name":"lab"}`), RemoteAddr: "192.0.2.1"})
	if status != 200 {
		t.Fatalf("bootstrap admin creates a group: %d %s", status, body)
	}
	if ev := e.lastEvent(); ev.ActorID != 0 || ev.ActorKey != "admin:abcd…" || ev.RemoteAddr != "192.0.2.1" {
		t.Errorf("event %+v", ev)
	}
}

// TestMe_KeyOutlivesCaller: a key issued through /api/me/api-keys expires
// no later than the key that issues it. Absent, expires_at is clamped to
// the calling key's; asked for later, or never, it is a 400 naming the
// ceiling. An admin issuing for a user through the admin API is not bound
// by the admin's own key.
func TestMe_KeyOutlivesCaller(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ceiling := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	for _, tc := range []struct {
		name string
		user store.User
	}{{"student", e.alice}, {"admin group without key expiry", e.admin}} {
		t.Run(tc.name, func(t *testing.T) {
			key, prefix, hash, err := accounts.NewKey()
			if err != nil {
				t.Fatal(err)
			}
			e.mu.Lock()
			e.secrets = append(e.secrets, key)
			e.mu.Unlock()
			if err := e.st.CreateKey(ctx, &store.APIKey{UserID: tc.user.ID, Name: "hour", Prefix: prefix, Hash: hash,
				Scopes: "inference", Status: store.KeyActive, ExpiresAt: &ceiling}); err != nil {
				t.Fatal(err)
			}
			m := e.newKey(key, "/api/me/api-keys", map[string]any{"name": "default"})
			if exp, err := time.Parse(time.RFC3339Nano, fmt.Sprint(m["expires_at"])); err != nil || exp.After(ceiling) {
				t.Errorf("default expiry %v (%v), want at most %v", m["expires_at"], err, ceiling)
			}
			for _, body := range []map[string]any{
				{"name": "later", "expires_at": ceiling.Add(time.Minute).Format(time.RFC3339)},
				{"name": "never", "expires_at": nil},
			} {
				if d := e.fail(key, "POST", "/api/me/api-keys", body, 400); !strings.Contains(d, "may not outlive") && !strings.Contains(d, "expire within") {
					t.Errorf("%v: detail %q", body, d)
				}
			}
			earlier := ceiling.Add(-30 * time.Minute)
			m = e.newKey(key, "/api/me/api-keys", map[string]any{"name": "earlier", "expires_at": earlier.Format(time.RFC3339)})
			if exp, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(m["expires_at"])); !exp.Equal(earlier) {
				t.Errorf("an earlier expiry was changed: %v, want %v", m["expires_at"], earlier)
			}
		})
	}
	// Through the admin API the admin's own key is no ceiling.
	e.newKey(e.adminKey, fmt.Sprintf("/api/admin/users/%d/api-keys", e.bob.ID), map[string]any{"name": "long"})
}
