package admin

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestModelAccess_GroupsAndUsers: model_access is set, shown, validated
// and cleared on groups, and on users as an override that null returns to
// the group's; each change drops cached principals (the allowlist travels
// with them).
func TestModelAccess_GroupsAndUsers(t *testing.T) {
	e := newEnv(t)
	g := e.ok(e.adminKey, "POST", "/api/admin/groups", map[string]any{"name": "lab", "model_access": []string{"llama3*", "openai/*"}})
	gid := num(g["id"])
	if !reflect.DeepEqual(g["model_access"], []any{"llama3*", "openai/*"}) {
		t.Fatalf("created group model_access = %v", g["model_access"])
	}
	all := e.keys.all
	e.ok(e.adminKey, "PATCH", fmt.Sprintf("/api/admin/groups/%d", gid), map[string]any{"model_access": []string{"qwen3*"}})
	if e.keys.all != all+1 {
		t.Fatal("a model_access change must invalidate cached principals")
	}
	got := e.ok(e.auditorKey, "GET", fmt.Sprintf("/api/admin/groups/%d", gid), nil)
	if !reflect.DeepEqual(got["model_access"], []any{"qwen3*"}) {
		t.Fatalf("after PATCH model_access = %v", got["model_access"])
	}
	e.ok(e.adminKey, "PATCH", fmt.Sprintf("/api/admin/groups/%d", gid), map[string]any{"model_access": nil})
	got = e.ok(e.auditorKey, "GET", fmt.Sprintf("/api/admin/groups/%d", gid), nil)
	if !reflect.DeepEqual(got["model_access"], []any{}) {
		t.Fatalf("after null model_access = %v, want []", got["model_access"])
	}

	u := e.ok(e.adminKey, "POST", "/api/admin/users", map[string]any{"username": "mia", "group": "lab", "model_access": []string{"phi*"}})
	uid := num(u["id"])
	if !reflect.DeepEqual(u["model_access"], []any{"phi*"}) {
		t.Fatalf("created user model_access = %v", u["model_access"])
	}
	e.ok(e.adminKey, "PATCH", fmt.Sprintf("/api/admin/users/%d", uid), map[string]any{"model_access": nil})
	got = e.ok(e.auditorKey, "GET", fmt.Sprintf("/api/admin/users/%d", uid), nil)
	if user, _ := got["user"].(map[string]any); user == nil || user["model_access"] != nil {
		t.Fatalf("after null the override must be gone: %v", got)
	}

	for _, c := range []struct {
		path   string
		body   map[string]any
		detail string
	}{
		{"/api/admin/groups", map[string]any{"name": "x", "model_access": []string{"a b"}}, "model_access: pattern 0: must not contain spaces"},
		{"/api/admin/groups", map[string]any{"name": "x", "model_access": []string{""}}, "model_access: pattern 0: empty"},
		{"/api/admin/groups", map[string]any{"name": "x", "model_access": "llama3*"}, "field model_access: expected"},
		{"/api/admin/users", map[string]any{"username": "y", "group": "lab", "model_access": []string{strings.Repeat("m", 300)}}, "longer than 256"},
	} {
		if d := e.fail(e.adminKey, "POST", c.path, c.body, 400); !strings.Contains(d, c.detail) {
			t.Errorf("POST %s %v: detail %q, want %q", c.path, c.body, d, c.detail)
		}
	}
}
