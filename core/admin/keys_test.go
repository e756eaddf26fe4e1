package admin

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/accounts"
	"github.com/mindrouter/mindrouter/core/store"
)

func TestKeys_CreateOnceListRevokeDelete(t *testing.T) { keysLifecycle(t, newEnv(t)) }

func keysLifecycle(t *testing.T, e *env) {
	path := fmt.Sprintf("/api/admin/users/%d/api-keys", e.alice.ID)
	before := time.Now()
	m := e.newKey(e.adminKey, path, map[string]any{"name": "laptop"})
	full := m["full_key"].(string)
	id := num(m["id"])
	if m["key_prefix"] != full[:accounts.PrefixLen] || m["name"] != "laptop" || num(m["user_id"]) != e.alice.ID {
		t.Fatalf("create: %v", m)
	}
	if s := m["scopes"].([]any); len(s) != 1 || s[0] != "inference" {
		t.Errorf("default scopes %v, want [inference]", s)
	}
	// Expiry from the group's api_key_expiry_days.
	exp, err := time.Parse(time.RFC3339, m["expires_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	days := time.Duration(e.groups["students"].KeyExpiryDays) * 24 * time.Hour
	if days > 0 && (exp.Before(before.Add(days-time.Minute)) || exp.After(time.Now().Add(days+time.Minute))) {
		t.Errorf("expires_at %v, want about now + %v", exp, days)
	}
	// The new key works, and only its hash is stored.
	me := e.ok(full, "GET", "/api/me", nil)
	if num(me["user_id"]) != e.alice.ID || me["key_prefix"] != m["key_prefix"] {
		t.Fatalf("/api/me with the new key: %v", me)
	}
	k, err := e.st.Key(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	h := accounts.HashKey([]byte(full))
	if !bytes.Equal(k.Hash, h[:]) {
		t.Error("stored hash is not the key's SHA-256")
	}
	ev := e.lastEvent()
	if ev.Action != "key.create" || ev.TargetID != fmt.Sprint(id) || !strings.Contains(ev.Detail, m["key_prefix"].(string)) {
		t.Errorf("audit: %+v", ev)
	}

	// Listing shows prefixes only: no key, no hash, under any field.
	_, raw := e.call(e.adminKey, "GET", "/api/admin/api-keys?limit=1000", nil)
	if bytes.Contains(raw, []byte(full)) || bytes.Contains(raw, []byte(full[accounts.PrefixLen:])) {
		t.Fatalf("the key appears in the listing")
	}
	for _, f := range []string{"hash", "argon", "full_key"} {
		if bytes.Contains(bytes.ToLower(raw), []byte(f)) {
			t.Errorf("the listing has a %q field: %s", f, raw)
		}
	}
	list := e.ok(e.adminKey, "GET", fmt.Sprintf("/api/admin/api-keys?user_id=%d&search=LAPTOP", e.alice.ID), nil)
	keys := list["api_keys"].([]any)
	if num(list["total"]) != 1 || len(keys) != 1 {
		t.Fatalf("filtered listing: %v", list)
	}
	if kv := keys[0].(map[string]any); kv["username"] != "alice" || kv["status"] != "active" || kv["key_prefix"] != m["key_prefix"] {
		t.Errorf("key view: %v", kv)
	}
	list = e.ok(e.adminKey, "GET", "/api/admin/api-keys?search=bob", nil)
	if num(list["total"]) != 1 {
		t.Errorf("search by username: %v", list)
	}

	// Revoke: the key stops, the cache is told, a second revoke is a no-op.
	r := e.ok(e.adminKey, "POST", fmt.Sprintf("/api/admin/api-keys/%d/revoke", id), nil)
	if r["status"] != "revoked" || r["already_revoked"] != false || num(r["api_key_id"]) != id {
		t.Fatalf("revoke: %v", r)
	}
	if !slices.ContainsFunc(e.keys.hashes, func(b []byte) bool { return bytes.Equal(b, h[:]) }) {
		t.Error("revoke did not invalidate the key's hash")
	}
	e.fail(full, "GET", "/api/me", nil, 401)
	n := len(e.events())
	r = e.ok(e.adminKey, "POST", fmt.Sprintf("/api/admin/api-keys/%d/revoke", id), nil)
	if r["already_revoked"] != true || len(e.events()) != n {
		t.Errorf("second revoke: %v (events %d → %d)", r, n, len(e.events()))
	}
	list = e.ok(e.adminKey, "GET", "/api/admin/api-keys?status=revoked", nil)
	if num(list["total"]) != 1 {
		t.Errorf("status filter: %v", list)
	}

	d := e.ok(e.adminKey, "DELETE", fmt.Sprintf("/api/admin/api-keys/%d", id), nil)
	if d["status"] != "deleted" || e.lastEvent().Action != "key.delete" {
		t.Fatalf("delete: %v", d)
	}
	e.fail(e.adminKey, "DELETE", fmt.Sprintf("/api/admin/api-keys/%d", id), nil, 404)
	e.fail(e.adminKey, "POST", fmt.Sprintf("/api/admin/api-keys/%d/revoke", id), nil, 404)
}

func TestKeys_ImportedKeyRevokeInvalidatesUser(t *testing.T) {
	e := newEnv(t)
	k := store.APIKey{UserID: e.bob.ID, Name: "old", Prefix: "mr2_ABCDEFGH", Argon2: "$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA", Scopes: "inference", Status: store.KeyActive}
	if err := e.st.CreateKey(context.Background(), &k); err != nil {
		t.Fatal(err)
	}
	list := e.ok(e.adminKey, "GET", fmt.Sprintf("/api/admin/api-keys?user_id=%d", e.bob.ID), nil)
	if _, raw := e.call(e.adminKey, "GET", "/api/admin/api-keys", nil); bytes.Contains(raw, []byte("argon2id")) {
		t.Fatalf("the Argon2 string is in the listing: %s", raw)
	}
	var imported bool
	for _, kv := range list["api_keys"].([]any) {
		if num(kv.(map[string]any)["id"]) == k.ID {
			imported = kv.(map[string]any)["imported"] == true
		}
	}
	if !imported {
		t.Errorf("imported key not marked imported: %v", list)
	}
	e.ok(e.adminKey, "POST", fmt.Sprintf("/api/admin/api-keys/%d/revoke", k.ID), nil)
	if !slices.Contains(e.keys.users, e.bob.ID) || len(e.keys.hashes) != 0 {
		t.Errorf("revoking an imported key: users %v hashes %d, want the user invalidated", e.keys.users, len(e.keys.hashes))
	}
}

func TestKeys_ScopesExpiryAndErrors(t *testing.T) {
	e := newEnv(t)
	alice := fmt.Sprintf("/api/admin/users/%d/api-keys", e.alice.ID)
	root := fmt.Sprintf("/api/admin/users/%d/api-keys", e.admin.ID)
	watcher := fmt.Sprintf("/api/admin/users/%d/api-keys", e.auditor.ID)

	m := e.newKey(e.adminKey, root, map[string]any{"name": "ops", "scopes": []string{"admin", "inference", "admin"}, "expires_at": nil})
	if s := m["scopes"].([]any); len(s) != 2 || s[0] != "inference" || s[1] != "admin" || m["expires_at"] != nil {
		t.Errorf("admin key: %v", m)
	}
	e.newKey(e.adminKey, watcher, map[string]any{"name": "audit", "scopes": []string{"audit"}})
	at := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	m = e.newKey(e.adminKey, alice, map[string]any{"name": "short", "expires_at": at.Format(time.RFC3339)})
	if got, _ := time.Parse(time.RFC3339, m["expires_at"].(string)); !got.Equal(at) {
		t.Errorf("expires_at %v, want %v", m["expires_at"], at)
	}

	cases := []struct {
		name, path string
		body       any
		status     int
		detail     string
	}{
		{"admin scope for a student", alice, map[string]any{"name": "x", "scopes": []string{"admin"}}, 400, "does not allow the admin scope"},
		{"audit scope for a student", alice, map[string]any{"name": "x", "scopes": []string{"audit"}}, 400, "does not allow the audit scope"},
		{"admin scope for an auditor", watcher, map[string]any{"name": "x", "scopes": []string{"admin"}}, 400, "does not allow the admin scope"},
		{"unknown scope", alice, map[string]any{"name": "x", "scopes": []string{"root"}}, 400, "unknown scope"},
		{"no scope", alice, map[string]any{"name": "x", "scopes": []string{}}, 400, "at least one scope"},
		{"scopes not a list", alice, map[string]any{"name": "x", "scopes": "inference"}, 400, "field scopes: expected an array"},
		{"no name", alice, map[string]any{}, 400, "field name"},
		{"long name", alice, map[string]any{"name": strings.Repeat("n", 101)}, 400, "field name: longer than 100"},
		{"past expiry", alice, map[string]any{"name": "x", "expires_at": "2001-01-01T00:00:00Z"}, 400, "expires_at: must be in the future"},
		{"bad expiry", alice, map[string]any{"name": "x", "expires_at": "tomorrow"}, 400, "expires_at: expected an RFC 3339 time"},
		{"unknown user", "/api/admin/users/424242/api-keys", map[string]any{"name": "x"}, 404, "User not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := e.fail(e.adminKey, "POST", tc.path, tc.body, tc.status); !strings.Contains(d, tc.detail) {
				t.Errorf("detail %q, want %q", d, tc.detail)
			}
		})
	}
}

func TestKeys_MaxKeys(t *testing.T) { keysMax(t, newEnv(t)) }

func keysMax(t *testing.T, e *env) {
	ctx := context.Background()
	g := e.groups["students"]
	g.MaxKeys = 3
	if err := e.st.UpdateGroup(ctx, &g); err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/api/admin/users/%d/api-keys", e.alice.ID)
	// alice has one key already; two more fit, concurrently.
	done := make(chan int, 4)
	for i := range 4 {
		go func() {
			status, out, err := e.try(e.adminKey, "POST", path, map[string]any{"name": fmt.Sprint("k", i)})
			if err != nil {
				t.Error(err)
			}
			e.remember(out)
			done <- status
		}()
	}
	var got []int
	for range 4 {
		got = append(got, <-done)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{200, 200, 409, 409}) {
		t.Fatalf("four concurrent creations with room for two: %v", got)
	}
	d := e.fail(e.adminKey, "POST", path, map[string]any{"name": "more"}, 409)
	if !strings.Contains(d, "max_api_keys") {
		t.Errorf("detail %q does not name max_api_keys", d)
	}
	// A revoked key frees its place.
	e.ok(e.adminKey, "POST", fmt.Sprintf("/api/admin/api-keys/%d/revoke", e.mustKeyID(e.alice.ID)), nil)
	e.newKey(e.adminKey, path, map[string]any{"name": "after-revoke"})
}

// mustKeyID is the id of one of the user's active keys.
func (e *env) mustKeyID(userID int64) int64 {
	e.t.Helper()
	keys, err := e.st.Keys(context.Background(), userID)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, k := range keys {
		if k.Status == store.KeyActive {
			return k.ID
		}
	}
	e.t.Fatal("no active key")
	return 0
}
