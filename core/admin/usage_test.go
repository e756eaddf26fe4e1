package admin

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// usageEnv is auditEnv over auditSample with the clock at 12 March 2026,
// 15:00 UTC: alice spent 120 tokens on each of qwen3-8b and llama3-70b on
// the 10th and on qwen3-8b on the 11th, bob 120 in a failed request on
// the 12th.
func usageEnv(t *testing.T) *env {
	e := auditEnv(t, auditSample())
	now := time.Date(2026, 3, 12, 15, 0, 0, 0, time.UTC)
	e.h = New(Options{Store: e.st, Keys: e.keys, Audit: e.h.audit, Now: func() time.Time { return now }})
	return e
}

func (e *env) getJSON(key, path string, want int, v any) {
	e.t.Helper()
	status, out := e.call(key, "GET", path, nil)
	if status != want {
		e.t.Fatalf("GET %s: status %d, want %d: %s", path, status, want, out)
	}
	if v != nil {
		if err := json.Unmarshal(out, v); err != nil {
			e.t.Fatalf("GET %s: %v: %s", path, err, out)
		}
	}
}

func TestUsageDaily(t *testing.T) {
	e := usageEnv(t)
	day := func(d, model string, failed int64) DayModelTokens {
		return DayModelTokens{Day: d, Model: model, Requests: 1, Failed: failed, PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120, EnergyJ: 12.5}
	}
	alice := []DayModelTokens{day("2026-03-10", "llama3-70b", 0), day("2026-03-10", "qwen3-8b", 0), day("2026-03-11", "qwen3-8b", 0)}
	for _, tc := range []struct {
		name, key, path string
		want            dailyView
	}{
		{"admin, three days", e.adminKey, "/api/admin/usage/daily?user_id=3&days=3",
			dailyView{UserID: 3, Days: 3, Start: "2026-03-10", End: "2026-03-12", Usage: alice}},
		{"auditor, two days", e.auditorKey, "/api/admin/usage/daily?user_id=3&days=2",
			dailyView{UserID: 3, Days: 2, Start: "2026-03-11", End: "2026-03-12", Usage: alice[2:]}},
		{"alice's own, default 30 days", e.aliceKey, "/api/me/usage/daily",
			dailyView{UserID: 3, Days: 30, Start: "2026-02-11", End: "2026-03-12", Usage: alice}},
		{"bob's own, today", e.bobKey, "/api/me/usage/daily?days=1",
			dailyView{UserID: 4, Days: 1, Start: "2026-03-12", End: "2026-03-12", Usage: []DayModelTokens{day("2026-03-12", "qwen3-8b", 1)}}},
		{"a user without requests", e.adminKey, "/api/admin/usage/daily?user_id=1",
			dailyView{UserID: 1, Days: 30, Start: "2026-02-11", End: "2026-03-12", Usage: []DayModelTokens{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got dailyView
			e.getJSON(tc.key, tc.path, 200, &got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	rows, err := e.h.UsageByDay(context.Background(), 3, 3)
	if err != nil || !reflect.DeepEqual(rows, alice) {
		t.Errorf("UsageByDay(3, 3) = %+v, %v; want %+v", rows, err, alice)
	}
	if _, err := e.h.UsageByDay(context.Background(), 3, 0); err == nil {
		t.Error("UsageByDay(3, 0): no error")
	}
	for _, tc := range []struct {
		key, path string
		status    int
		detail    string
	}{
		{e.aliceKey, "/api/admin/usage/daily?user_id=3", 403, "admin scope"},
		{e.adminKey, "/api/admin/usage/daily", 400, "user_id: required"},
		{e.adminKey, "/api/admin/usage/daily?user_id=x", 400, "user_id: must be a positive integer"},
		{e.adminKey, "/api/admin/usage/daily?user_id=99", 404, "User not found"},
		{e.adminKey, "/api/admin/usage/daily?user_id=3&days=0", 400, "days: must be an integer between 1 and 366"},
		{e.aliceKey, "/api/me/usage/daily?days=367", 400, "days: must be an integer between 1 and 366"},
		{e.adminKey, "/api/me/usage/daily/x", 404, "Not Found"},
	} {
		var d detail
		e.getJSON(tc.key, tc.path, tc.status, &d)
		if !strings.Contains(d.Detail, tc.detail) {
			t.Errorf("GET %s: detail %q, want it to say %q", tc.path, d.Detail, tc.detail)
		}
	}
}

type totalsAnswer struct {
	Users []userTotal    `json:"users"`
	Rows  []userTotal    `json:"rows"`
	By    string         `json:"by"`
	Total map[string]any `json:"total"`
	Start time.Time      `json:"start"`
	End   time.Time      `json:"end"`
	Extra map[string]any `json:"-"`
}

func TestTopUsers(t *testing.T) {
	e := usageEnv(t)
	alice := userTotal{UserID: 3, Username: "alice", Group: "students", Requests: 3, PromptTokens: 300, CompletionTokens: 60,
		TotalTokens: 360, EnergyJ: 37.5, EnergyRequests: 3, EnergyTokens: 360, JoulesPer1kTokens: 37.5 * 1000 / 360}
	bob := userTotal{UserID: 4, Username: "bob", Group: "students", Requests: 1, Failed: 1, PromptTokens: 100, CompletionTokens: 20,
		TotalTokens: 120, EnergyJ: 12.5, EnergyRequests: 1, EnergyTokens: 120, JoulesPer1kTokens: 12.5 * 1000 / 120}
	for _, tc := range []struct {
		path string
		want []userTotal
	}{
		{"/api/admin/top-users", []userTotal{alice, bob}},
		{"/api/admin/top-users?limit=1", []userTotal{alice}},
		{"/api/admin/top-users?days=1", []userTotal{bob}},
		{"/api/admin/top-users?start_date=2026-03-11&end_date=2026-03-11", []userTotal{
			{UserID: 3, Username: "alice", Group: "students", Requests: 1, PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120,
				EnergyJ: 12.5, EnergyRequests: 1, EnergyTokens: 120, JoulesPer1kTokens: 12.5 * 1000 / 120}}},
		{"/api/admin/top-users?group=students&limit=5", []userTotal{alice, bob}},
		{"/api/admin/top-users?group=staff", []userTotal{}},
	} {
		var a totalsAnswer
		e.getJSON(e.auditorKey, tc.path, 200, &a)
		if !reflect.DeepEqual(a.Users, tc.want) {
			t.Errorf("GET %s:\n got %+v\nwant %+v", tc.path, a.Users, tc.want)
		}
	}
	var a totalsAnswer
	e.getJSON(e.adminKey, "/api/admin/energy?by=group", 200, &a)
	if len(a.Rows) != 1 || a.Rows[0].Group != "students" || a.Rows[0].EnergyJ != 50 || a.Rows[0].TotalTokens != 480 || a.By != "group" {
		t.Errorf("energy by group: %+v", a)
	}
	if a.Total["energy_j"] != 50.0 || a.Total["requests"] != 4.0 {
		t.Errorf("energy total: %+v", a.Total)
	}
	e.getJSON(e.adminKey, "/api/admin/energy?days=2&limit=1", 200, &a)
	if len(a.Rows) != 1 || a.Rows[0].Username != "alice" || a.Rows[0].EnergyJ != 12.5 || a.By != "user" {
		t.Errorf("energy by user, two days, top 1: %+v", a)
	}
	for _, tc := range []struct {
		key, path string
		status    int
		detail    string
	}{
		{e.aliceKey, "/api/admin/top-users", 403, "admin scope"},
		{e.adminKey, "/api/admin/top-users?limit=0", 400, "limit: must be an integer between 1 and 1000"},
		{e.adminKey, "/api/admin/top-users?days=3&start_date=2026-03-01", 400, "days or a date range, not both"},
		{e.adminKey, "/api/admin/top-users?start_date=2026-03-12&end_date=2026-03-01", 400, "start_date must be before end_date"},
		{e.adminKey, "/api/admin/top-users?end_date=yesterday", 400, "end_date: expected a date"},
		{e.adminKey, "/api/admin/energy?by=model", 400, "by: must be user or group"},
		{e.adminKey, "/api/admin/top-users?days=400", 400, "days: must be an integer between 1 and 366"},
	} {
		var d detail
		e.getJSON(tc.key, tc.path, tc.status, &d)
		if !strings.Contains(d.Detail, tc.detail) {
			t.Errorf("GET %s: detail %q, want it to say %q", tc.path, d.Detail, tc.detail)
		}
	}
	status, _ := e.call(e.adminKey, "POST", "/api/admin/top-users", nil)
	if status != 405 {
		t.Errorf("POST /api/admin/top-users: %d, want 405", status)
	}
}

// Without a request audit the usage routes say so (503), and UsageByDay
// returns ErrNoAudit.
func TestUsageWithoutAudit(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/api/admin/top-users", "/api/admin/usage/daily?user_id=3", "/api/admin/energy", "/api/me/usage/daily"} {
		key := e.adminKey
		if strings.HasPrefix(p, "/api/me") {
			key = e.aliceKey
		}
		e.getJSON(key, p, 503, nil)
	}
	if _, err := e.h.UsageByDay(context.Background(), 3, 30); !errors.Is(err, ErrNoAudit) {
		t.Errorf("UsageByDay without an audit: %v, want ErrNoAudit", err)
	}
}
