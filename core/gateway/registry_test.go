package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// The live registry, end to end through the admin API: a backend
// registered at run time serves its model at once (no restart, no wait
// for a discovery round); an update of its size, priority or GPUs applies
// at once; a delete lets the stream in flight on it finish and then its
// model is gone (404).
func TestRegistry_AdminRegisterRouteDelete(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "discovery: {interval: 1h}\n")
	const model = "extra-7b"
	c, curl := startFake(t, fakellm.Config{Engine: "vllm", Models: []string{model}, TPS: 40, Tokens: 20})
	ctx := context.Background()
	if _, err := e.client.Chat.Completions.New(ctx, chatParams(model, "before")); statusOf(err) != 404 {
		t.Fatalf("before registration: %v, want 404", err)
	}

	var v struct {
		ID      int64 `json:"id"`
		Applied *bool `json:"applied"`
	}
	if st := callAPI(t, e.base, adminKey, "POST", "/api/admin/backends/register",
		map[string]any{"name": "gpu3-vllm", "url": curl, "engine": "vllm", "max_concurrent": 2}, &v); st != 200 {
		t.Fatalf("register: %d", st)
	}
	if v.Applied == nil || !*v.Applied {
		t.Fatalf("register: applied %v", v.Applied)
	}
	if _, err := e.client.Chat.Completions.New(ctx, chatParams(model, "after")); err != nil {
		t.Fatalf("right after registration: %v", err)
	}
	if n := c.Stats().Requests[chatPath]; n != 1 {
		t.Fatalf("the registered backend served %d requests, want 1", n)
	}

	path := fmt.Sprintf("/api/admin/backends/%d", v.ID)
	if st := callAPI(t, e.base, adminKey, "PATCH", path, map[string]any{"max_concurrent": 3, "priority": 5}, nil); st != 200 {
		t.Fatalf("update: %d", st)
	}
	b := e.gw.Reg.Backend("gpu3-vllm")
	if b == nil || b.Capacity() != 3 || b.Priority() != 5 || !b.Routable() {
		t.Fatalf("after the update: %+v", b)
	}
	// Its GPUs on a node: the sidecar poll's placement applies at once.
	var node struct {
		ID int64 `json:"id"`
	}
	if st := callAPI(t, e.base, adminKey, "POST", "/api/admin/nodes",
		map[string]any{"name": "node-3", "sidecar_url": "http://127.0.0.1:1", "sidecar_key": "sk-test"}, &node); st != 200 {
		t.Fatalf("create node: %d", st)
	}
	if st := callAPI(t, e.base, adminKey, "PATCH", path, map[string]any{"node_id": node.ID, "gpu_indices": []int{1, 0}}, nil); st != 200 {
		t.Fatalf("update gpus: %d", st)
	}
	if nodes := e.gw.Reg.Nodes(); len(nodes) != 1 || fmt.Sprint(nodes[0].Backends["gpu3-vllm"]) != "[0 1]" {
		t.Fatalf("nodes after the update: %+v", nodes)
	}

	type result struct {
		chunks int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		n, err := streamModel(e, model, "in flight across the delete")
		done <- result{n, err}
	}()
	waitFailover(t, "the stream on the registered backend", func() bool { return c.Stats().ActiveStreams == 1 })
	if st := callAPI(t, e.base, adminKey, "DELETE", path, nil, nil); st != 200 {
		t.Fatalf("delete: %d", st)
	}
	if e.gw.Reg.Backend("gpu3-vllm") != nil || b.Routable() {
		t.Fatal("the deleted backend is still registered or routable")
	}
	if nodes := e.gw.Reg.Nodes(); len(nodes) != 1 || len(nodes[0].Backends) != 0 {
		t.Fatalf("the deleted backend is still placed on its node: %+v", nodes)
	}
	if _, err := e.client.Chat.Completions.New(ctx, chatParams(model, "after delete")); statusOf(err) != 404 {
		t.Fatalf("after the delete: %v, want 404", err)
	}
	if r := <-done; r.err != nil || r.chunks < 10 {
		t.Fatalf("the stream in flight across the delete: %d chunks, error %v", r.chunks, r.err)
	}
	// Its slot is given back to it as the stream ends (just after the
	// client has the last chunk).
	waitFailover(t, "the deleted backend's slot to be released", func() bool { return b.InFlight() == 0 })
}

// Another replica picks up a backend registered through this one's admin
// API from the shared store at its next discovery round, and drops it the
// same way after a delete.
func TestRegistry_OtherReplicaFollowsTheStore(t *testing.T) {
	fl := startFleet(t, 2, fakellm.Config{}, "discovery: {interval: 200ms}\n")
	a, b := fl[0], fl[1]
	const model = "extra-7b"
	_, curl := startFake(t, fakellm.Config{Engine: "vllm", Models: []string{model}})
	var v struct {
		ID int64 `json:"id"`
	}
	if st := callAPI(t, a.base, adminKey, "POST", "/api/admin/backends/register",
		map[string]any{"name": "gpu3-vllm", "url": curl, "engine": "vllm", "max_concurrent": 2}, &v); st != 200 {
		t.Fatalf("register: %d", st)
	}
	ctx := context.Background()
	waitFailover(t, "replica B to route the registered backend", func() bool {
		_, err := b.client.Chat.Completions.New(ctx, chatParams(model, "on B"))
		return err == nil
	})
	if st := callAPI(t, a.base, adminKey, "DELETE", fmt.Sprintf("/api/admin/backends/%d", v.ID), nil, nil); st != 200 {
		t.Fatalf("delete: %d", st)
	}
	waitFailover(t, "replica B to drop the deleted backend", func() bool {
		_, err := b.client.Chat.Completions.New(ctx, chatParams(model, "on B after delete"))
		return statusOf(err) == 404
	})
	// The config's backends are untouched by the sync.
	if _, err := b.client.Chat.Completions.New(ctx, chatParams(vllmModel, "config backend")); err != nil {
		t.Fatalf("a config backend on B: %v", err)
	}
}

// streamModel runs one streaming chat request for model and counts its
// chunks.
func streamModel(e *env, model, prompt string) (chunks int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := e.client.Chat.Completions.NewStreaming(ctx, chatParams(model, prompt))
	for s.Next() {
		chunks++
	}
	return chunks, s.Err()
}
