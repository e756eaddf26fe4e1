package admin

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
)

// nodeRec is recBackends that can also take the store's nodes into a
// registry (NodeRefresher), counting the calls.
type nodeRec struct {
	*recBackends
	mu    sync.Mutex
	calls int
	fail  error
}

func (n *nodeRec) RefreshNodes(context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls++
	return n.fail
}

func (n *nodeRec) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls
}

// GET /nodes/{id} shows one node (to auditors too) without its sidecar
// key; unknown ids are 404 and students are refused.
func TestNodes_Get(t *testing.T) {
	e := newEnv(t)
	const secret = "sk-sidecar-get-secret"
	e.secrets = append(e.secrets, secret)
	n := e.ok(e.adminKey, "POST", "/api/admin/nodes", map[string]any{"name": "gpu7", "sidecar_url": "http://gpu7:8007", "sidecar_key": secret})
	path := fmt.Sprintf("/api/admin/nodes/%d", num(n["id"]))
	for _, key := range []string{e.adminKey, e.auditorKey} {
		got := e.ok(key, "GET", path, nil)
		if got["name"] != "gpu7" || got["sidecar_url"] != "http://gpu7:8007" || got["sidecar_key_set"] != true ||
			got["status"] != "enabled" || num(got["id"]) != num(n["id"]) {
			t.Errorf("GET %s: %v", path, got)
		}
		if _, raw := e.call(key, "GET", path, nil); bytes.Contains(raw, []byte(secret)) {
			t.Errorf("GET %s shows the sidecar key: %s", path, raw)
		}
	}
	if d := e.fail(e.adminKey, "GET", "/api/admin/nodes/4242", nil, 404); d != "Node not found" {
		t.Errorf("unknown node: %q", d)
	}
	e.fail(e.aliceKey, "GET", path, nil, 403)
}

// POST /nodes/{id}/refresh re-reads the node from the store and hands the
// nodes to the live registry when there is one (applied true, or false
// with the error); it is an admin action, recorded, and not an auditor's.
func TestNodes_Refresh(t *testing.T) {
	e := newEnv(t)
	n := e.ok(e.adminKey, "POST", "/api/admin/nodes", map[string]any{"name": "gpu8", "sidecar_url": "http://gpu8:8007"})
	id := num(n["id"])
	path := fmt.Sprintf("/api/admin/nodes/%d/refresh", id)

	// A Backends without NodeRefresher (the CLI's case): the store is read,
	// nothing is applied and the answer says nothing about a registry.
	r := e.ok(e.adminKey, "POST", path, nil)
	if r["status"] != "refreshed" || num(r["node_id"]) != id || r["node"].(map[string]any)["name"] != "gpu8" {
		t.Errorf("refresh: %v", r)
	}
	if _, ok := r["applied"]; ok {
		t.Errorf("refresh without a registry claims applied: %v", r)
	}

	rec := &nodeRec{recBackends: e.backends}
	e.h.backends = rec // before the next request, which the listener orders after this
	r = e.ok(e.adminKey, "POST", path, nil)
	if r["applied"] != true || rec.count() != 1 {
		t.Errorf("refresh with a registry: %v, %d calls", r, rec.count())
	}
	rec.mu.Lock()
	rec.fail = errBoom
	rec.mu.Unlock()
	r = e.ok(e.adminKey, "POST", path, nil)
	if r["applied"] != false || r["apply_error"] != errBoom.Error() || rec.count() != 2 {
		t.Errorf("refresh the registry refuses: %v", r)
	}

	e.fail(e.auditorKey, "POST", path, nil, 403)
	e.fail(e.adminKey, "POST", "/api/admin/nodes/4242/refresh", nil, 404)
	if rec.count() != 2 {
		t.Errorf("refused refreshes reached the registry: %d calls", rec.count())
	}
	ev := e.ok(e.adminKey, "GET", "/api/admin/audit/admin?limit=1", nil)["events"].([]any)[0].(map[string]any)
	if ev["action"] != "node.refresh" || ev["entity_type"] != "node" || ev["entity_id"] != fmt.Sprint(id) {
		t.Errorf("audit event: %v", ev)
	}
}
