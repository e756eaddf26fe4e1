package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/core/store"
)

func TestBackends_RegisterUpsertPatchStatus(t *testing.T) { backendsLifecycle(t, newEnv(t)) }

func backendsLifecycle(t *testing.T, e *env) {
	node := e.ok(e.adminKey, "POST", "/api/admin/nodes/register", map[string]any{"name": "gpu1", "sidecar_url": "http://gpu1:8007", "sidecar_key": "sidecar-secret-123", "hostname": "gpu1.local"})
	nodeID := num(node["id"])
	e.secrets = append(e.secrets, "sidecar-secret-123")
	if node["sidecar_key_set"] != true {
		t.Fatalf("node: %v", node)
	}

	b := e.ok(e.adminKey, "POST", "/api/admin/backends/register", map[string]any{
		"name": "vllm-a", "url": "http://10.0.0.5:8000", "engine": "vllm", "node_id": nodeID, "gpu_indices": []int{0, 1}, "gpu_memory_gb": 80,
	})
	id := num(b["id"])
	if b["status"] != store.BackendEnabled || num(b["max_concurrent"]) != 4 || b["node_name"] != "gpu1" || b["applied"] != true {
		t.Fatalf("registered: %v", b)
	}
	if len(e.backends.applied) != 1 || e.backends.applied[0].Name != "vllm-a" || !slices.Equal(e.backends.applied[0].GPUIndices, []int{0, 1}) {
		t.Errorf("applied: %+v", e.backends.applied)
	}
	if e.lastEvent().Action != "backend.register" {
		t.Errorf("event %q", e.lastEvent().Action)
	}

	// Duplicates conflict unless upsert.
	e.fail(e.adminKey, "POST", "/api/admin/backends/register", map[string]any{"name": "vllm-a", "url": "http://10.0.0.6:8000", "engine": "vllm"}, 409)
	if d := e.fail(e.adminKey, "POST", "/api/admin/backends/register", map[string]any{"name": "other", "url": "http://10.0.0.5:8000", "engine": "vllm"}, 409); !strings.Contains(d, "registered as 'vllm-a'") {
		t.Errorf("detail %q", d)
	}
	up := e.ok(e.adminKey, "POST", "/api/admin/backends/register", map[string]any{"name": "vllm-a", "url": "http://10.0.0.5:8000", "engine": "vllm", "max_concurrent": 16, "upsert": true})
	if num(up["id"]) != id || num(up["max_concurrent"]) != 16 || e.lastEvent().Action != "backend.upsert" {
		t.Fatalf("upsert: %v", up)
	}

	// PATCH renames: the registry drops the old name and takes the new.
	p := e.ok(e.adminKey, "PATCH", fmt.Sprintf("/api/admin/backends/%d", id), map[string]any{"name": "vllm-b", "priority": 5, "node_id": nil, "models": []string{"qwen3-8b"}})
	if p["name"] != "vllm-b" || num(p["priority"]) != 5 || p["node_id"] != nil || p["node_name"] != nil {
		t.Fatalf("patch: %v", p)
	}
	if !slices.Contains(e.backends.removed, "vllm-a") {
		t.Errorf("rename did not remove the old name from the registry: %v", e.backends.removed)
	}

	list := e.call2List(e.auditorKey, "/api/admin/backends")
	if len(list) != 1 || list[0]["name"] != "vllm-b" || list[0]["models"].([]any)[0] != "qwen3-8b" {
		t.Fatalf("list: %v", list)
	}

	for verb, status := range map[string]string{"drain": store.BackendDraining, "disable": store.BackendDisabled, "enable": store.BackendEnabled} {
		r := e.ok(e.adminKey, "POST", fmt.Sprintf("/api/admin/backends/%d/%s", id, verb), nil)
		if r["status"] != status || num(r["backend_id"]) != id || r["applied"] != true {
			t.Errorf("%s: %v", verb, r)
		}
		got, err := e.st.Backend(t.Context(), id)
		if err != nil || got.Status != status {
			t.Errorf("%s: stored status %q %v", verb, got.Status, err)
		}
		if last := e.backends.applied[len(e.backends.applied)-1]; last.Status != status {
			t.Errorf("%s: applied status %q", verb, last.Status)
		}
		if e.lastEvent().Action != "backend."+verb {
			t.Errorf("event %q", e.lastEvent().Action)
		}
	}
	r := e.ok(e.adminKey, "POST", fmt.Sprintf("/api/admin/backends/%d/refresh", id), nil)
	if r["status"] != "refreshed" || !slices.Equal(e.backends.refreshed, []string{"vllm-b"}) {
		t.Errorf("refresh: %v %v", r, e.backends.refreshed)
	}

	// A registry failure is reported, the stored change stays.
	e.backends.fail = errBoom
	r = e.ok(e.adminKey, "POST", fmt.Sprintf("/api/admin/backends/%d/disable", id), nil)
	if r["applied"] != false || !strings.Contains(fmt.Sprint(r["apply_error"]), "registry says no") {
		t.Errorf("failed apply: %v", r)
	}
	if d := e.fail(e.adminKey, "POST", fmt.Sprintf("/api/admin/backends/%d/refresh", id), nil, 502); !strings.Contains(d, "registry says no") {
		t.Errorf("failed refresh: %q", d)
	}
	e.backends.fail = nil

	// A node with backends cannot go; after the backend, it can.
	e.ok(e.adminKey, "PATCH", fmt.Sprintf("/api/admin/backends/%d", id), map[string]any{"node_id": nodeID})
	e.fail(e.adminKey, "DELETE", fmt.Sprintf("/api/admin/nodes/%d", nodeID), nil, 409)
	d := e.ok(e.adminKey, "DELETE", fmt.Sprintf("/api/admin/backends/%d", id), nil)
	if d["status"] != "deleted" || e.backends.removed[len(e.backends.removed)-1] != "vllm-b" {
		t.Fatalf("delete: %v %v", d, e.backends.removed)
	}
	e.fail(e.adminKey, "GET", fmt.Sprintf("/api/admin/backends/%d", id), nil, 404)
	e.ok(e.adminKey, "DELETE", fmt.Sprintf("/api/admin/nodes/%d", nodeID), nil)
}

// call2List GETs a JSON array.
func (e *env) call2List(key, path string) []map[string]any {
	e.t.Helper()
	status, out := e.call(key, "GET", path, nil)
	var l []map[string]any
	if err := json.Unmarshal(out, &l); status != 200 || err != nil {
		e.t.Fatalf("GET %s: %d %v: %s", path, status, err, out)
	}
	return l
}

func TestBackends_WithoutRegistry(t *testing.T) {
	e := newEnv(t, envOpts{noBackends: true})
	b := e.ok(e.adminKey, "POST", "/api/admin/backends/register", map[string]any{"name": "o", "url": "http://h:11434", "engine": "ollama"})
	if _, ok := b["applied"]; ok {
		t.Errorf("without a registry the response says nothing of applying: %v", b)
	}
	r := e.ok(e.adminKey, "POST", fmt.Sprintf("/api/admin/backends/%d/drain", num(b["id"])), nil)
	if _, ok := r["applied"]; ok || r["status"] != store.BackendDraining {
		t.Errorf("drain: %v", r)
	}
	e.fail(e.adminKey, "POST", fmt.Sprintf("/api/admin/backends/%d/refresh", num(b["id"])), nil, 503)
}

func TestBackendsNodes_Errors(t *testing.T) { backendsErrors(t, newEnv(t)) }

func backendsErrors(t *testing.T, e *env) {
	b := e.ok(e.adminKey, "POST", "/api/admin/backends/register", map[string]any{"name": "x1", "url": "http://h:1", "engine": "vllm"})
	bp := fmt.Sprintf("/api/admin/backends/%d", num(b["id"]))
	n := e.ok(e.adminKey, "POST", "/api/admin/nodes", map[string]any{"name": "n1"})
	np := fmt.Sprintf("/api/admin/nodes/%d", num(n["id"]))
	cases := []struct {
		name, method, path string
		body               any
		status             int
		detail             string
	}{
		{"no url", "POST", "/api/admin/backends/register", map[string]any{"name": "y", "engine": "vllm"}, 400, "field url: required"},
		{"bad url", "POST", "/api/admin/backends/register", map[string]any{"name": "y", "url": "ftp://h", "engine": "vllm"}, 400, "field url"},
		{"bad engine", "POST", "/api/admin/backends/register", map[string]any{"name": "y", "url": "http://h:2", "engine": "V LLM"}, 400, "field engine"},
		{"zero max_concurrent", "POST", "/api/admin/backends/register", map[string]any{"name": "y", "url": "http://h:2", "engine": "vllm", "max_concurrent": 0}, 400, "max_concurrent: must be between 1"},
		{"unknown node", "POST", "/api/admin/backends/register", map[string]any{"name": "y", "url": "http://h:2", "engine": "vllm", "node_id": 777}, 400, "node_id: node 777 not found"},
		{"bad gpu index", "PATCH", bp, map[string]any{"gpu_indices": []int{-1}}, 400, "gpu_indices"},
		{"upsert on patch", "PATCH", bp, map[string]any{"upsert": true}, 400, `"upsert": unknown field`},
		{"empty patch", "PATCH", bp, map[string]any{}, 400, "No fields to update"},
		{"unknown backend", "POST", "/api/admin/backends/5555/enable", nil, 404, "Backend not found"},
		{"register with PATCH", "PATCH", "/api/admin/backends/register", map[string]any{"name": "z"}, 405, "Method Not Allowed"},
		{"duplicate node", "POST", "/api/admin/nodes", map[string]any{"name": "n1"}, 409, "'n1' already exists"},
		{"bad node status", "PATCH", np, map[string]any{"status": "maybe"}, 400, "field status"},
		{"bad sidecar url", "PATCH", np, map[string]any{"sidecar_url": "gpu1:8007"}, 400, "sidecar_url"},
		{"unknown node id", "DELETE", "/api/admin/nodes/4242", nil, 404, "Node not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := e.fail(e.adminKey, tc.method, tc.path, tc.body, tc.status); !strings.Contains(d, tc.detail) {
				t.Errorf("detail %q, want %q", d, tc.detail)
			}
		})
	}
}

func TestNodes_SidecarKeyNeverShown(t *testing.T) {
	e := newEnv(t)
	const secret = "sk-sidecar-very-secret"
	e.secrets = append(e.secrets, secret)
	n := e.ok(e.adminKey, "POST", "/api/admin/nodes", map[string]any{"name": "g2", "sidecar_url": "https://g2:8007", "sidecar_key": secret})
	up := e.ok(e.adminKey, "PATCH", fmt.Sprintf("/api/admin/nodes/%d", num(n["id"])), map[string]any{"sidecar_key": secret + "2", "status": "disabled"})
	if up["sidecar_key_set"] != true || up["status"] != "disabled" {
		t.Fatalf("patch: %v", up)
	}
	for _, path := range []string{"/api/admin/nodes", "/api/admin/audit/admin"} {
		if _, raw := e.call(e.adminKey, "GET", path, nil); bytes.Contains(raw, []byte(secret)) {
			t.Errorf("GET %s shows the sidecar key: %s", path, raw)
		}
	}
	st, err := e.st.Node(t.Context(), num(n["id"]))
	if err != nil || st.SidecarKey != secret+"2" {
		t.Errorf("stored sidecar key %v", err)
	}
}
