package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// adminQueue is GET /api/admin/queue as the tests read it.
type adminQueue struct {
	Queue struct {
		Total   int            `json:"total"`
		ByModel map[string]int `json:"by_model"`
		Models  []struct {
			Model             string  `json:"model"`
			Waiting           int     `json:"waiting"`
			OldestWaitSeconds float64 `json:"oldest_wait_seconds"`
			Requests          []struct {
				User          string  `json:"user"`
				Group         string  `json:"group"`
				WaitedSeconds float64 `json:"waited_seconds"`
			} `json:"requests"`
		} `json:"models"`
	} `json:"queue"`
	FairShare struct {
		TotalUsers int `json:"total_users"`
		Groups     []struct {
			Group        string  `json:"group"`
			ActiveUsers  int     `json:"active_users"`
			Waiting      int     `json:"waiting"`
			ServedTokens float64 `json:"served_tokens"`
			Share        float64 `json:"share"`
			Entitlement  float64 `json:"entitlement"`
		} `json:"groups"`
	} `json:"fair_share"`
	BackendQueues map[string]int64 `json:"backend_queues"`
	Scheduler     string           `json:"scheduler"`
}

// TestAdminQueue_ShowsWhoWaits: with a backend saturated (max_concurrent 1
// in front of a slow fakellm), GET /api/admin/queue shows the requests
// waiting for its model — who, in which group, for how long — and each
// group's share of service against its entitlement; the audit scope may
// read it, an inference key may not.
func TestAdminQueue_ShowsWhoWaits(t *testing.T) {
	t.Parallel()
	_, url := startFake(t, fakellm.Config{Engine: "vllm", Models: []string{vllmModel}, MaxConcurrent: 1, TPS: 2, Tokens: 10_000})
	h := startHostile(t, hostileOpts{backends: backendYAML("slow", "vllm", url, 1)})
	// No token budget: a request without max_tokens would reserve what
	// is left of one, refusing the user's next request.
	unlimited := map[string]any{"token_budget_override": 0}
	_, ann := newUser(t, h.base, "ann", "students", unlimited, nil)
	_, bob := newUser(t, h.base, "bob", "staff", unlimited, nil)
	_, aud := newUser(t, h.base, "audra", "auditor", nil, []string{"audit"})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // the clients leave: their places and the slot free up
	call := func(key string, stream bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "POST", h.base+"/v1/chat/completions", strings.NewReader(chatJSON(vllmModel, stream)))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				buf := make([]byte, 512)
				for _, err := resp.Body.Read(buf); err == nil; _, err = resp.Body.Read(buf) {
				}
				resp.Body.Close()
			}
		}()
	}
	read := func(key string) (adminQueue, int) {
		var q adminQueue
		st := callAPI(t, h.base, key, "GET", "/api/admin/queue", nil, &q)
		return q, st
	}
	// ann's stream takes the only slot (it decodes for minutes)...
	call(ann.FullKey, true)
	testutil.WaitFor(t, "the slot taken", 10*time.Second, func() bool { q, _ := read(adminKey); return q.BackendQueues["slow"] == 1 })
	// ...so bob's and ann's next requests wait.
	call(bob.FullKey, false)
	call(ann.FullKey, false)
	var q adminQueue
	testutil.WaitFor(t, "two requests waiting", 10*time.Second, func() bool { q, _ = read(aud.FullKey); return q.Queue.Total == 2 })

	if q.Scheduler != "fair" || q.Queue.ByModel[vllmModel] != 2 || len(q.Queue.Models) != 1 || q.Queue.Models[0].Model != vllmModel {
		t.Fatalf("queue %+v", q.Queue)
	}
	who := map[string]string{}
	for _, r := range q.Queue.Models[0].Requests {
		who[r.User] = r.Group
		if r.WaitedSeconds < 0 || r.WaitedSeconds > q.Queue.Models[0].OldestWaitSeconds {
			t.Errorf("request %+v: waited outside [0, oldest %v]", r, q.Queue.Models[0].OldestWaitSeconds)
		}
	}
	if who["bob"] != "staff" || who["ann"] != "students" || len(who) != 2 {
		t.Errorf("waiting: %v, want bob (staff) and ann (students)", who)
	}
	groups := map[string]float64{}
	var entitled float64
	for _, g := range q.FairShare.Groups {
		groups[g.Group] = g.ServedTokens
		entitled += g.Entitlement
		if g.Waiting != 1 || g.ActiveUsers != 1 || g.Entitlement <= 0 {
			t.Errorf("group %+v: want one active user with one request waiting and an entitlement", g)
		}
	}
	if len(groups) != 2 || groups["students"] <= 0 || groups["staff"] != 0 || entitled < 0.999 || entitled > 1.001 {
		t.Errorf("fair share %+v: want students served (ann's stream), staff not yet, entitlements summing to 1", q.FairShare)
	}
	if _, st := read(ann.FullKey); st != 403 {
		t.Errorf("an inference key reading the queue: %d, want 403", st)
	}
}
