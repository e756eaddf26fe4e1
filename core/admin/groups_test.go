package admin

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestGroups_CRUD(t *testing.T) { groupsCRUD(t, newEnv(t)) }

func groupsCRUD(t *testing.T, e *env) {
	list := e.ok(e.auditorKey, "GET", "/api/admin/groups", nil)
	names := map[string]map[string]any{}
	for _, g := range list["groups"].([]any) {
		names[g.(map[string]any)["name"].(string)] = g.(map[string]any)
	}
	for _, n := range []string{"students", "staff", "faculty", "researchers", "admin", "auditor"} {
		if names[n] == nil {
			t.Errorf("seeded group %q not listed", n)
		}
	}
	if s := names["students"]; num(s["user_count"]) != 2 || s["display_name"] != "students" || num(s["max_api_keys"]) == 0 {
		t.Errorf("students: %v", s)
	}

	g := e.ok(e.adminKey, "POST", "/api/admin/groups", map[string]any{"name": "lab", "display_name": "The Lab", "token_budget": 0, "rpm_limit": 10, "scheduler_weight": 2.5, "max_api_keys": 2})
	id := num(g["id"])
	// Unset fields take the reference's defaults.
	if num(g["token_budget"]) != 0 || num(g["rpm_limit"]) != 10 || g["scheduler_weight"] != 2.5 || num(g["budget_period_days"]) != 30 || num(g["api_key_expiry_days"]) != 45 {
		t.Fatalf("created: %v", g)
	}
	if e.lastEvent().Action != "group.create" {
		t.Errorf("event %q", e.lastEvent().Action)
	}
	e.fail(e.adminKey, "POST", "/api/admin/groups", map[string]any{"name": "lab"}, 409)

	all := e.keys.all
	up := e.ok(e.adminKey, "PATCH", fmt.Sprintf("/api/admin/groups/%d", id), map[string]any{"rpm_limit": 20, "is_auditor": true})
	if up["status"] != "updated" || num(up["group_id"]) != id || e.keys.all != all+1 {
		t.Fatalf("update: %v (InvalidateAll %d→%d)", up, all, e.keys.all)
	}
	got := e.ok(e.adminKey, "GET", fmt.Sprintf("/api/admin/groups/%d", id), nil)
	if num(got["rpm_limit"]) != 20 || got["is_auditor"] != true || num(got["max_api_keys"]) != 2 {
		t.Errorf("after update: %v", got)
	}

	// A group with users cannot go.
	students := e.groups["students"].ID
	if d := e.fail(e.adminKey, "DELETE", fmt.Sprintf("/api/admin/groups/%d", students), nil, 409); !strings.Contains(d, "users") {
		t.Errorf("detail %q", d)
	}
	del := e.ok(e.adminKey, "DELETE", fmt.Sprintf("/api/admin/groups/%d", id), nil)
	if del["status"] != "deleted" || e.lastEvent().Action != "group.delete" {
		t.Fatalf("delete: %v", del)
	}
	e.fail(e.adminKey, "DELETE", fmt.Sprintf("/api/admin/groups/%d", id), nil, 404)
	e.fail(e.adminKey, "PATCH", fmt.Sprintf("/api/admin/groups/%d", id), map[string]any{"rpm_limit": 1}, 404)
}

func TestGroups_Errors(t *testing.T) {
	e := newEnv(t)
	sid := e.groups["students"].ID
	patch := fmt.Sprintf("/api/admin/groups/%d", sid)
	cases := []struct {
		name, method, path string
		body               any
		status             int
		detail             string
	}{
		{"no name", "POST", "/api/admin/groups", map[string]any{"rpm_limit": 3}, 400, "field name: required"},
		{"long name", "POST", "/api/admin/groups", map[string]any{"name": strings.Repeat("g", 51)}, 400, "name: longer than 50"},
		{"negative budget", "POST", "/api/admin/groups", map[string]any{"name": "x", "token_budget": -5}, 400, "token_budget: must be between"},
		{"zero weight", "POST", "/api/admin/groups", map[string]any{"name": "x", "scheduler_weight": 0}, 400, "scheduler_weight: must be greater than 0"},
		{"zero period", "POST", "/api/admin/groups", map[string]any{"name": "x", "budget_period_days": 0}, 400, "budget_period_days: must be between 1"},
		{"bool as string", "POST", "/api/admin/groups", map[string]any{"name": "x", "is_admin": "yes"}, 400, "field is_admin: expected a boolean"},
		{"unknown field", "PATCH", patch, map[string]any{"token_limit": 1}, 400, `"token_limit": unknown field`},
		{"empty patch", "PATCH", patch, map[string]any{}, 400, "No fields to update"},
		{"rename onto another", "PATCH", patch, map[string]any{"name": "staff"}, 409, "'staff' already exists"},
		{"bad id", "PATCH", "/api/admin/groups/x", map[string]any{"rpm_limit": 1}, 400, "group_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := e.fail(e.adminKey, tc.method, tc.path, tc.body, tc.status); !strings.Contains(d, tc.detail) {
				t.Errorf("detail %q, want %q", d, tc.detail)
			}
		})
	}
}

// TestGroups_LastAdminGroup: taking is_admin from the last admin group
// with an active member is a 409 (the bootstrap key demoting its own
// group locked every admin out); once another admin group has an active
// member, it is allowed.
func TestGroups_LastAdminGroup(t *testing.T) {
	e := newEnv(t)
	admin := fmt.Sprintf("/api/admin/groups/%d", e.groups["admin"].ID)
	if d := e.fail(e.adminKey, "PATCH", admin, map[string]any{"is_admin": false}, 409); !strings.Contains(d, "last admin group") {
		t.Errorf("detail %q", d)
	}
	if got := e.ok(e.adminKey, "GET", admin, nil); got["is_admin"] != true {
		t.Fatalf("the refused change was stored: %v", got)
	}
	// Other changes to it still go through.
	e.ok(e.adminKey, "PATCH", admin, map[string]any{"rpm_limit": 100, "is_admin": true})
	ops := e.ok(e.adminKey, "POST", "/api/admin/groups", map[string]any{"name": "ops", "is_admin": true})
	// An admin group nobody is in does not count.
	e.fail(e.adminKey, "PATCH", admin, map[string]any{"is_admin": false}, 409)
	g, err := e.st.GroupByName(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	e.groups["ops"] = g
	_, opsKey := e.mkUser("opal", "ops", "inference,admin")
	e.ok(e.adminKey, "PATCH", admin, map[string]any{"is_admin": false})
	e.fail(opsKey, "PATCH", fmt.Sprintf("/api/admin/groups/%d", num(ops["id"])), map[string]any{"is_admin": false}, 409)
}
