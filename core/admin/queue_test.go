package admin

import (
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/sched"
)

type fixedQueue struct{ s sched.QueueSnapshot }

func (q fixedQueue) Snapshot() sched.QueueSnapshot { return q.s }

// TestQueue_Shape: GET /api/admin/queue renders the scheduler's snapshot
// in the reference's {queue, fair_share, backend_queues} shape plus who
// waits, for the audit scope too; without a fair scheduler it is empty.
func TestQueue_Shape(t *testing.T) {
	e := newEnv(t)
	if got := e.ok(e.auditorKey, "GET", "/api/admin/queue", nil); got["scheduler"] != "least_loaded" || num(got["queue"].(map[string]any)["total"]) != 0 {
		t.Fatalf("without a fair scheduler: %v", got)
	}
	e = newEnv(t, envOpts{queue: fixedQueue{sched.QueueSnapshot{
		Window: time.Minute,
		Models: []sched.ModelSnapshot{{Model: "m", Waiting: 1, Users: 1, OldestWait: 2 * time.Second,
			Requests: []sched.WaitingRequest{{User: "ann", Group: "students", Weight: 1, Waited: 2 * time.Second, Position: 1}}}},
		Groups:   []sched.GroupShare{{Group: "students", Users: 1, Weight: 1, Waiting: 1, Served: 10, Share: 1, Entitlement: 1}},
		Backends: []sched.BackendSlots{{Backend: "b", InFlight: 1, MaxConcurrent: 1, State: "enabled"}},
	}}})
	got := e.ok(e.auditorKey, "GET", "/api/admin/queue", nil)
	q := got["queue"].(map[string]any)
	m := q["models"].([]any)[0].(map[string]any)
	r := m["requests"].([]any)[0].(map[string]any)
	if num(q["total"]) != 1 || num(q["by_model"].(map[string]any)["m"]) != 1 || r["user"] != "ann" || r["group"] != "students" || r["waited_seconds"] != 2.0 {
		t.Errorf("queue %v", q)
	}
	fs := got["fair_share"].(map[string]any)
	g := fs["groups"].([]any)[0].(map[string]any)
	if num(fs["total_users"]) != 1 || fs["window_seconds"] != 60.0 || g["entitlement"] != 1.0 || g["served_tokens"] != 10.0 {
		t.Errorf("fair_share %v", fs)
	}
	if num(got["backend_queues"].(map[string]any)["b"]) != 1 || got["scheduler"] != "fair" {
		t.Errorf("backend_queues %v", got)
	}
	e.fail(e.adminKey, "POST", "/api/admin/queue", map[string]any{}, 405)
}
