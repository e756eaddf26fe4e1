package admin

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestUsers_CreateListGetUpdateDelete(t *testing.T) { usersCRUD(t, newEnv(t)) }

func usersCRUD(t *testing.T, e *env) {
	students := e.groups["students"]

	created := e.ok(e.adminKey, "POST", "/api/admin/users", map[string]any{
		"username": "carol", "email": "carol@example.edu", "full_name": "Carol C", "group_id": students.ID,
		"rpm_limit_override": 5, "password": "ignored-compat-field",
	})
	id := num(created["id"])
	if created["username"] != "carol" || created["group_name"] != "students" || created["is_active"] != true || num(created["rpm_limit_override"]) != 5 {
		t.Fatalf("created user: %v", created)
	}
	if created["token_budget_override"] != nil {
		t.Errorf("token_budget_override = %v, want null", created["token_budget_override"])
	}
	ev := e.lastEvent()
	if ev.Action != "user.create" || ev.TargetType != "user" || ev.TargetID != fmt.Sprint(id) || ev.ActorID != e.admin.ID || ev.ActorKey == "" || ev.RemoteAddr == "" {
		t.Errorf("audit event: %+v", ev)
	}
	if strings.Contains(ev.Detail, "ignored-compat-field") {
		t.Errorf("the password reached the audit detail: %s", ev.Detail)
	}

	list := e.ok(e.adminKey, "GET", "/api/admin/users?search=caro", nil)
	users := list["users"].([]any)
	if num(list["total"]) != 1 || len(users) != 1 || users[0].(map[string]any)["username"] != "carol" {
		t.Fatalf("search: %v", list)
	}
	list = e.ok(e.adminKey, "GET", fmt.Sprintf("/api/admin/users?group_id=%d&limit=1&skip=1", students.ID), nil)
	if num(list["total"]) != 3 || len(list["users"].([]any)) != 1 || num(list["limit"]) != 1 || num(list["skip"]) != 1 {
		t.Fatalf("group filter and paging: %v", list)
	}

	got := e.ok(e.adminKey, "GET", fmt.Sprintf("/api/admin/users/%d", id), nil)
	if got["user"].(map[string]any)["email"] != "carol@example.edu" {
		t.Fatalf("get: %v", got)
	}
	if q := got["quota"].(map[string]any); num(q["rpm_limit"]) != 5 || num(q["token_budget"]) != students.TokenBudget {
		t.Errorf("quota in detail: %v (want the override RPM 5 and the group's budget)", q)
	}

	staff := e.groups["staff"]
	upd := e.ok(e.adminKey, "PATCH", fmt.Sprintf("/api/admin/users/%d", id), map[string]any{"group": "staff", "rpm_limit_override": nil, "is_active": false})
	if upd["status"] != "updated" || num(upd["user_id"]) != id {
		t.Fatalf("update: %v", upd)
	}
	u, err := e.st.User(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if u.GroupID != staff.ID || u.RPM != nil || u.Active {
		t.Errorf("after update: %+v", u)
	}
	if !slices.Contains(e.keys.users, id) {
		t.Errorf("update did not invalidate the user's keys: %v", e.keys.users)
	}
	var det struct{ Fields []string }
	if err := json.Unmarshal([]byte(e.lastEvent().Detail), &det); err != nil || !slices.Equal(det.Fields, []string{"group", "is_active", "rpm_limit_override"}) {
		t.Errorf("update audit detail: %s", e.lastEvent().Detail)
	}

	e.keys.users = nil
	del := e.ok(e.adminKey, "DELETE", fmt.Sprintf("/api/admin/users/%d", id), nil)
	if del["status"] != "deleted" || num(del["user_id"]) != id {
		t.Fatalf("delete: %v", del)
	}
	if !slices.Contains(e.keys.users, id) {
		t.Errorf("delete did not invalidate: %v", e.keys.users)
	}
	if e.lastEvent().Action != "user.delete" {
		t.Errorf("last event %q", e.lastEvent().Action)
	}
	e.fail(e.adminKey, "GET", fmt.Sprintf("/api/admin/users/%d", id), nil, 404)
	e.fail(e.adminKey, "DELETE", fmt.Sprintf("/api/admin/users/%d", id), nil, 404)
}

func TestUsers_Errors(t *testing.T) { usersErrors(t, newEnv(t)) }

func usersErrors(t *testing.T, e *env) {
	sid := e.groups["students"].ID
	cases := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		detail string // a substring of the message
	}{
		{"duplicate username", "POST", "/api/admin/users", map[string]any{"username": "alice", "group_id": sid}, 409, "'alice' already exists"},
		{"unknown group", "POST", "/api/admin/users", map[string]any{"username": "x", "group_id": 9999}, 400, "group_id: group 9999 not found"},
		{"unknown group name", "POST", "/api/admin/users", map[string]any{"username": "x", "group": "nope"}, 400, `group: group "nope" not found`},
		{"no group", "POST", "/api/admin/users", map[string]any{"username": "x"}, 400, "group_id: required"},
		{"no username", "POST", "/api/admin/users", map[string]any{"group_id": sid}, 400, "username: required"},
		{"unknown field", "POST", "/api/admin/users", map[string]any{"username": "x", "group_id": sid, "colour": "red"}, 400, `field "colour": unknown field`},
		{"wrong type", "POST", "/api/admin/users", map[string]any{"username": "x", "group_id": "students"}, 400, "field group_id: expected an integer, got string"},
		{"wrong override type", "POST", "/api/admin/users", map[string]any{"username": "x", "group_id": sid, "rpm_limit_override": "many"}, 400, "field rpm_limit_override: expected an integer"},
		{"negative override", "POST", "/api/admin/users", map[string]any{"username": "x", "group_id": sid, "token_budget_override": -1}, 400, "token_budget_override: must be between"},
		{"fractional int", "POST", "/api/admin/users", map[string]any{"username": "x", "group_id": 1.5}, 400, "field group_id"},
		{"huge int", "POST", "/api/admin/users", `{"username":"x","group_id":1e40}`, 400, "field group_id"},
		{"long username", "POST", "/api/admin/users", map[string]any{"username": strings.Repeat("a", 101), "group_id": sid}, 400, "username: longer than 100"},
		{"space in username", "POST", "/api/admin/users", map[string]any{"username": "a b", "group_id": sid}, 400, "username: must not contain spaces"},
		{"control char", "POST", "/api/admin/users", map[string]any{"username": "a\x01", "group_id": sid}, 400, "control characters"},
		{"bad email", "POST", "/api/admin/users", map[string]any{"username": "x", "group_id": sid, "email": "nope"}, 400, "email: not an email"},
		{"bad JSON", "POST", "/api/admin/users", `{"username":`, 400, "not valid JSON"},
		{"array body", "POST", "/api/admin/users", `[1,2]`, 400, "expected a JSON object"},
		{"null body", "POST", "/api/admin/users", `null`, 400, "expected a JSON object"},
		{"empty body", "POST", "/api/admin/users", nil, 400, "expected a JSON object"},
		{"trailing data", "POST", "/api/admin/users", `{"username":"x","group_id":1} {}`, 400, "after top-level value"},
		{"both group forms", "POST", "/api/admin/users", map[string]any{"username": "x", "group_id": sid, "group": "staff"}, 400, "not both"},
		{"empty patch", "PATCH", fmt.Sprintf("/api/admin/users/%d", e.alice.ID), `{}`, 400, "No fields to update"},
		{"patch to taken name", "PATCH", fmt.Sprintf("/api/admin/users/%d", e.alice.ID), map[string]any{"username": "bob"}, 409, "'bob' already exists"},
		{"patch unknown user", "PATCH", "/api/admin/users/987654", map[string]any{"full_name": "x"}, 404, "User not found"},
		{"bad id", "GET", "/api/admin/users/abc", nil, 400, "user_id must be a positive integer"},
		{"zero id", "GET", "/api/admin/users/0", nil, 400, "user_id must be a positive integer"},
		{"leading zero id", "GET", "/api/admin/users/07", nil, 400, "user_id"},
		{"signed id", "GET", "/api/admin/users/+7", nil, 400, "user_id"},
		{"overflowing id", "GET", "/api/admin/users/99999999999999999999", nil, 400, "user_id"},
		{"bad limit", "GET", "/api/admin/users?limit=0", nil, 400, "query parameter limit"},
		{"big limit", "GET", "/api/admin/users?limit=1001", nil, 400, "query parameter limit"},
		{"bad skip", "GET", "/api/admin/users?skip=-1", nil, 400, "query parameter skip"},
		{"bad group filter", "GET", "/api/admin/users?group_id=x", nil, 400, "query parameter group_id"},
		{"delete self", "DELETE", fmt.Sprintf("/api/admin/users/%d", e.admin.ID), nil, 400, "your own account"},
	}
	before := len(e.events())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := e.fail(e.adminKey, tc.method, tc.path, tc.body, tc.status)
			if !strings.Contains(d, tc.detail) {
				t.Errorf("detail %q, want it to contain %q", d, tc.detail)
			}
		})
	}
	if n := len(e.events()); n != before {
		t.Errorf("failed requests recorded %d admin events", n-before)
	}
}
