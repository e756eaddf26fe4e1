package admin

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/audit"
)

// auditEnv is env with the request audit read from a real embedded sink
// file holding evs.
func auditEnv(t *testing.T, evs []audit.Event) *env {
	t.Helper()
	db, err := audit.OpenEmbedded(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cols := make([]string, len(audit.Columns))
	for i, c := range audit.Columns {
		cols[i] = `"` + c + `"`
	}
	ins := `INSERT INTO requests (` + strings.Join(cols, ", ") + `) VALUES (?` + strings.Repeat(", ?", len(cols)-1) + `)`
	for _, v := range evs {
		if _, err := db.Exec(ins, eventValues(v, true)...); err != nil {
			t.Fatal(err)
		}
	}
	return withAudit(newEnv(t), audit.NewSQLiteSearcher(db))
}

// withAudit gives e a Handler that reads the audit through s.
func withAudit(e *env, s audit.Searcher) *env {
	e.h = New(Options{Store: e.st, Keys: e.keys, Audit: s})
	return e
}

// eventValues are v's columns in audit.Columns order, as the embedded
// sink (sqlite) or ClickHouse stores them.
func eventValues(v audit.Event, sqlite bool) []any {
	b := func(x bool) any {
		if sqlite {
			return x
		}
		if x {
			return uint8(1)
		}
		return uint8(0)
	}
	var tm any = v.Time.UTC()
	if sqlite {
		tm = v.Time.UTC().Format("2006-01-02 15:04:05.000000")
	}
	return []any{v.RequestID, tm, v.Replica,
		v.UserID, v.User, v.Group, v.KeyID, v.ClientIP, v.UserAgent,
		v.Dialect, v.Route, v.Kind, v.Model, b(v.Stream),
		v.Backend, v.Node, v.GPUs, v.Attempts,
		v.Status, v.ErrorCode, v.Error, v.FinishReason, b(v.ClientGone), state(v),
		v.PromptTokens, v.CompletionTokens, v.ReasoningTokens, v.CachedTokens, b(v.TokensEstimated),
		v.TotalUs, v.AuthUs, v.LimitUs, v.ReadUs, v.CheckUs, v.DecodeUs,
		v.QueueUs, v.EncodeUs, v.BackendUs, v.RespondUs, v.TTFTUs, v.FairnessDelayUs, v.StreamPluginUs,
		v.Chunks, v.BytesIn, v.BytesOut,
		v.RequestBody, v.ResponseBody, b(v.ContentTruncated), v.Decision, v.EnergyJ}
}

// auditSample: alice's three requests on 10 and 11 March (one mentions
// "Secret Sauce"), bob's failed one on 12 March.
// state is v's row state as stored: finished when unset.
func state(v audit.Event) string {
	if v.State == "" {
		return audit.RowFinished
	}
	return v.State
}

func auditSample() []audit.Event {
	day := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	ev := func(id string, at time.Time, user string, uid int64, model string, status uint16) audit.Event {
		return audit.Event{
			RequestID: id, Time: at, Replica: "gw-a", UserID: uid, User: user, Group: "students", KeyID: "key:abcd",
			ClientIP: "10.1.2.3", UserAgent: "openai-python/1.0", Dialect: "openai", Route: "chat", Kind: "chat",
			Model: model, Stream: true, Backend: "gpu1", Node: "n1", GPUs: "0", Attempts: 1, Status: status,
			PromptTokens: 100, CompletionTokens: 20, TotalUs: 1_500_000, QueueUs: 2500, TTFTUs: 90_000, FairnessDelayUs: 1200, StreamPluginUs: 70,
			RequestBody: `{"messages":[{"role":"user","content":"hello"}]}`, ResponseBody: "hi there",
			Decision: `{"backend":"gpu1","candidates":2}`, EnergyJ: 12.5,
		}
	}
	evs := []audit.Event{
		ev("req-a1", day, "alice", 3, "qwen3-8b", 200),
		ev("req-a2", day.Add(2*time.Hour), "alice", 3, "llama3-70b", 200),
		ev("req-a3", day.Add(26*time.Hour), "alice", 3, "qwen3-8b", 200),
		ev("req-b1", day.Add(50*time.Hour), "bob", 4, "qwen3-8b", 502),
	}
	evs[2].RequestBody = `{"messages":[{"role":"user","content":"the Secret Sauce recipe"}]}`
	evs[3].Error, evs[3].ErrorCode, evs[3].Decision = "backend gpu1: connection refused", "upstream_error", ""
	return evs
}

type searchAnswer struct {
	Results []map[string]any `json:"results"`
	Total   int              `json:"total"`
}

func (e *env) search(key string, params url.Values) searchAnswer {
	e.t.Helper()
	status, out := e.call(key, "GET", "/api/admin/audit/search?"+params.Encode(), nil)
	if status != 200 {
		e.t.Fatalf("search %v: status %d: %s", params, status, out)
	}
	var a searchAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		e.t.Fatalf("search %v: %v: %s", params, err, out)
	}
	return a
}

func ids(a searchAnswer) string {
	var s []string
	for _, r := range a.Results {
		s = append(s, r["request_id"].(string))
	}
	return strings.Join(s, ",")
}

func TestAuditSearch(t *testing.T) { auditSearchCases(t, auditEnv(t, auditSample())) }

// Rows the gateway never finished say so, and the status filter selects
// them: in flight (started), interrupted (its gateway was killed), panic.
func TestAuditSearchUnfinished(t *testing.T) {
	evs := auditSample()[:1] // req-a1, finished
	for _, v := range []struct{ id, state string }{{"req-s", audit.RowStarted}, {"req-i", audit.RowInterrupted}, {"req-p", audit.RowPanic}} {
		ev := auditSample()[0]
		ev.RequestID, ev.State, ev.Time = v.id, v.state, ev.Time.Add(time.Minute)
		if v.state == audit.RowPanic {
			ev.Status = 500
		} else {
			ev.Status = 0
		}
		evs = append(evs, ev)
	}
	e := auditEnv(t, evs)
	for _, tc := range []struct{ params, want string }{
		{"status=completed", "req-a1"},
		{"status=failed", "req-p,req-i"}, // status 500 or interrupted; in flight is neither (same time: id order, descending)
		{"status=started", "req-s"},
		{"status=interrupted", "req-i"},
		{"status=panic", "req-p"},
	} {
		params, _ := url.ParseQuery(tc.params)
		if got := ids(e.search(e.adminKey, params)); got != tc.want {
			t.Errorf("search %q: %q, want %q", tc.params, got, tc.want)
		}
	}
	for _, r := range e.search(e.adminKey, url.Values{}).Results {
		want := map[string]string{"req-a1": "completed", "req-s": "started", "req-i": "interrupted", "req-p": "panic"}[r["request_id"].(string)]
		if r["status"] != want {
			t.Errorf("%s: status %v, want %s", r["request_id"], r["status"], want)
		}
	}
}

func auditSearchCases(t *testing.T, e *env) {
	for _, tc := range []struct {
		params string
		want   string // ids, newest first
		total  int
	}{
		{"", "req-b1,req-a3,req-a2,req-a1", 4},
		{"user=alice", "req-a3,req-a2,req-a1", 3},
		{"user_id=4", "req-b1", 1},
		{"model=qwen3-8b&user=alice", "req-a3,req-a1", 2},
		{"status=502", "req-b1", 1},
		{"status=failed", "req-b1", 1},
		{"status=completed&limit=2", "req-a3,req-a2", 3},
		{"skip=1&limit=2", "req-a3,req-a2", 4},
		{"skip=9", "", 4},
		{"start_date=2026-03-11", "req-b1,req-a3", 2},
		{"start_date=2026-03-10&end_date=2026-03-10", "req-a2,req-a1", 2},
		{"start_date=2026-03-10T10:00:00Z&end_date=2026-03-11T12:00:00Z", "req-a3,req-a2", 2},
		{"search=secret%20SAUCE", "req-a3", 1},
		{"search_text=connection%20refused", "req-b1", 1},
		{"search=hi%20there&user=bob", "req-b1", 1},
		{"search=%25", "", 0},
		{"user=nobody", "", 0},
	} {
		params, err := url.ParseQuery(tc.params)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{e.adminKey, e.auditorKey} {
			a := e.search(key, params)
			if got := ids(a); got != tc.want || a.Total != tc.total {
				t.Errorf("search %q: %q total %d, want %q total %d", tc.params, got, a.Total, tc.want, tc.total)
			}
		}
	}

	// The row: the reference's audit fields, no content.
	r := e.search(e.auditorKey, url.Values{"user": {"bob"}}).Results[0]
	for k, want := range map[string]any{
		"request_id": "req-b1", "request_uuid": "req-b1", "created_at": "2026-03-12T11:00:00Z", "user": "bob", "user_id": 4.0,
		"model": "qwen3-8b", "endpoint": "chat", "status": "failed", "status_code": 502.0, "backend": "gpu1",
		"prompt_tokens": 100.0, "completion_tokens": 20.0, "total_tokens": 120.0, "total_time_ms": 1500.0,
		"queue_delay_ms": 2.5, "error_message": "backend gpu1: connection refused", "is_streaming": true,
		"client_ip": "10.1.2.3", "api_key": "key:abcd", "energy_j": 12.5,
	} {
		if r[k] != want {
			t.Errorf("result field %s = %#v, want %#v", k, r[k], want)
		}
	}
	for _, k := range []string{"request_body", "response_body", "decision"} {
		if _, ok := r[k]; ok {
			t.Errorf("a search result carries %s", k)
		}
	}
	if d := e.fail(e.aliceKey, "GET", "/api/admin/audit/search", nil, 403); !strings.Contains(d, "admin scope") {
		t.Errorf("a student searching: %q", d)
	}
}

func TestAuditSearchBadParams(t *testing.T) {
	e := auditEnv(t, auditSample())
	for params, name := range map[string]string{
		"limit=1001":           "limit",
		"limit=0":              "limit",
		"skip=-1":              "skip",
		"status=queued":        "status",
		"status=42":            "status",
		"user_id=x":            "user_id",
		"start_date=yesterday": "start_date",
		"end_date=2026-13-01":  "end_date",
		"start_date=2026-03-12&end_date=2026-03-10":      "start_date",
		"search=" + strings.Repeat("x", maxSearchText+1): "search",
	} {
		d := e.fail(e.adminKey, "GET", "/api/admin/audit/search?"+params, nil, 400)
		if !strings.Contains(d, name) {
			t.Errorf("search?%.40s: %q does not name %s", params, d, name)
		}
	}
}

func TestAuditGet(t *testing.T) { auditGetCases(t, auditEnv(t, auditSample())) }

func auditGetCases(t *testing.T, e *env) {
	m := e.ok(e.auditorKey, "GET", "/api/admin/audit/req-a3", nil)
	for k, want := range map[string]any{
		"request_id": "req-a3", "user": "alice", "status": "completed",
		"request_body": `{"messages":[{"role":"user","content":"the Secret Sauce recipe"}]}`, "response_body": "hi there",
	} {
		if m[k] != want {
			t.Errorf("field %s = %#v, want %#v", k, m[k], want)
		}
	}
	if d, _ := m["decision"].(map[string]any); d["backend"] != "gpu1" {
		t.Errorf("decision = %#v, want the stored JSON object", m["decision"])
	}
	if st, _ := m["stages_us"].(map[string]any); st["ttft"] != 90000.0 || st["total"] != 1500000.0 || st["fairness_delay"] != 1200.0 || st["stream_plugin"] != 70.0 {
		t.Errorf("stages_us = %#v", m["stages_us"])
	}
	if m := e.ok(e.adminKey, "GET", "/api/admin/audit/req-b1", nil); m["decision"] != nil {
		t.Errorf("no decision: %#v, want null", m["decision"])
	}
	if d := e.fail(e.adminKey, "GET", "/api/admin/audit/req-zz", nil, 404); !strings.Contains(d, "req-zz") {
		t.Errorf("unknown id: %q", d)
	}
	e.fail(e.aliceKey, "GET", "/api/admin/audit/req-a1", nil, 403)
	e.fail(e.auditorKey, "DELETE", "/api/admin/audit/req-a1", nil, 405)
	// The admin audit log keeps its own route.
	if m := e.ok(e.auditorKey, "GET", "/api/admin/audit/admin", nil); m["events"] == nil {
		t.Errorf("/audit/admin: %v", m)
	}
}

func TestAuditOff(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/api/admin/audit/search?user=alice", "/api/admin/audit/req-1"} {
		if d := e.fail(e.adminKey, "GET", p, nil, 503); !strings.Contains(d, "audit") {
			t.Errorf("GET %s without an audit store: %q", p, d)
		}
	}
}
