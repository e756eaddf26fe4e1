package admin

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/core/auth"
)

func TestHandles(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/admin/users": true, "/api/admin": true, "/api/me": true, "/api/me/usage": true, "/api/me/api-keys/3/revoke": true,
		"/api/chat": false, "/api/meta": false, "/api/administer": false, "/v1/models": false, "/api/tags": false,
	} {
		if got := Handles([]byte(path)); got != want {
			t.Errorf("Handles(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestScopes(t *testing.T) {
	e := newEnv(t)
	uid := e.alice.ID
	reads := []string{
		"/api/admin/users", fmt.Sprintf("/api/admin/users/%d", uid), "/api/admin/api-keys", "/api/admin/groups",
		"/api/admin/backends", "/api/admin/nodes", fmt.Sprintf("/api/admin/quotas/%d", uid), "/api/admin/audit/admin",
	}
	writes := []struct{ method, path, body string }{
		{"POST", "/api/admin/users", `{"username":"z","group":"students"}`},
		{"PATCH", fmt.Sprintf("/api/admin/users/%d", uid), `{"full_name":"z"}`},
		{"DELETE", fmt.Sprintf("/api/admin/users/%d", uid), ``},
		{"POST", fmt.Sprintf("/api/admin/users/%d/api-keys", uid), `{"name":"z"}`},
		{"POST", fmt.Sprintf("/api/admin/api-keys/%d/revoke", e.mustKeyID(uid)), ``},
		{"POST", "/api/admin/groups", `{"name":"z"}`},
		{"POST", "/api/admin/backends/register", `{"name":"z","url":"http://z:1","engine":"vllm"}`},
		{"POST", "/api/admin/nodes", `{"name":"z"}`},
		{"POST", fmt.Sprintf("/api/admin/quotas/%d/reset", uid), ``},
	}
	for _, p := range reads {
		for _, k := range []string{e.adminKey, e.auditorKey} {
			if status, out := e.call(k, "GET", p, nil); status != 200 {
				t.Errorf("GET %s: %d %s", p, status, out)
			}
		}
		if d := e.fail(e.aliceKey, "GET", p, nil, 403); !strings.Contains(d, "admin scope") {
			t.Errorf("GET %s as a student: %q", p, d)
		}
	}
	before := len(e.events())
	for _, w := range writes {
		if d := e.fail(e.auditorKey, w.method, w.path, w.body, 403); !strings.Contains(d, "read-only") {
			t.Errorf("%s %s as an auditor: %q", w.method, w.path, d)
		}
		e.fail(e.aliceKey, w.method, w.path, w.body, 403)
	}
	if n := len(e.events()); n != before {
		t.Fatalf("refused writes recorded %d events", n-before)
	}
	// An admin-group user's inference-only key is not an admin key.
	weak := e.newKey(e.adminKey, fmt.Sprintf("/api/admin/users/%d/api-keys", e.admin.ID), map[string]any{"name": "weak"})
	e.fail(weak["full_key"].(string), "GET", "/api/admin/users", nil, 403)
	// Every valid key may use /api/me.
	for _, k := range []string{e.adminKey, e.auditorKey, e.aliceKey} {
		e.ok(k, "GET", "/api/me", nil)
	}
	// A student probing unknown admin paths learns nothing: 403, not 404.
	e.fail(e.aliceKey, "GET", "/api/admin/secret-things", nil, 403)
}

func TestRouting_NotFoundAndMethods(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/api/admin/nope", 404, ""},
		{"GET", "/api/admin/users/1/api-keys/2", 404, ""},
		{"GET", "/api/admin", 404, ""},
		{"GET", "/api/me/nope", 404, ""},
		{"PUT", "/api/admin/users", 405, "GET, POST"},
		{"POST", fmt.Sprintf("/api/admin/users/%d", e.alice.ID), 405, "GET, PATCH, DELETE"},
		{"GET", "/api/admin/backends/register", 405, "POST"},
		{"DELETE", "/api/me", 405, "GET"},
		{"GET", "/api/admin/api-keys/1/revoke", 405, "POST"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, "http://admin.test"+tc.path, nil)
			req.Header.Set("Authorization", "Bearer "+e.adminKey)
			resp, err := e.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status || resp.Header.Get("Allow") != tc.allow {
				t.Errorf("%d Allow %q, want %d %q", resp.StatusCode, resp.Header.Get("Allow"), tc.status, tc.allow)
			}
		})
	}
	// A trailing slash is the same path.
	e.ok(e.adminKey, "GET", "/api/admin/users/", nil)
}

func TestDo_IsServe(t *testing.T) {
	e := newEnv(t)
	p := auth.Principal{KeyID: "cli", Scopes: auth.ScopeAdmin | auth.ScopeAudit}
	status, body := e.h.Do(context.Background(), &p, Request{Method: "POST", Path: "/api/admin/groups", Body: []byte(`{"name":"viaDo"}`), RemoteAddr: "cli"})
	if status != 200 || !strings.Contains(string(body), `"name":"viaDo"`) {
		t.Fatalf("Do: %d %s", status, body)
	}
	if ev := e.lastEvent(); ev.ActorKey != "cli" || ev.RemoteAddr != "cli" {
		t.Errorf("event %+v", ev)
	}
	_, viaHTTP := e.call(e.adminKey, "GET", "/api/admin/groups", nil)
	_, viaDo := e.h.Do(context.Background(), &p, Request{Method: "GET", Path: "/api/admin/groups"})
	if string(viaHTTP) != string(viaDo) {
		t.Errorf("Do and Serve answer differently:\n%s\n%s", viaDo, viaHTTP)
	}
}
