package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// The fair-share order's cost is on record apart from the queue wait: a
// user whose queued requests a later user's request overtakes (the fair
// scheduler serves the user with less service first) has a fairness
// delay recorded, never more than its queue wait, and the overtaking
// user's request none larger than its own queue wait either.
func TestAudit_FairnessDelay(t *testing.T) {
	// gpu2-ollama takes 4 requests at once; each holds its slot 150 ms.
	e := startEnv(t, fakellm.Config{}, fakellm.Config{TTFT: 150 * time.Millisecond}, "")
	lim := map[string]any{"max_concurrent_override": 100, "rpm_limit_override": 1000}
	_, heavy := newUser(t, e.base, "heavy", "staff", lim, nil)
	_, light := newUser(t, e.base, "light", "staff", lim, nil)
	ctx := context.Background()
	client := func(key string) openai.Client {
		return openai.NewClient(option.WithBaseURL(e.base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	}
	hc, lc := client(heavy.FullKey), client(light.FullKey)
	var wg sync.WaitGroup
	errs := make(chan error, 13)
	for i := range 12 { // 4 run, 8 queue
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := hc.Chat.Completions.New(ctx, chatParams(ollamaModel, fmt.Sprintf("heavy %d", i))); err != nil {
				errs <- err
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // heavy's requests are queued
	if _, err := lc.Chat.Completions.New(ctx, chatParams(ollamaModel, "light")); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ended := time.Now()
	var rows []struct {
		User     string `json:"user"`
		StagesUs struct {
			Queue         uint32 `json:"queue"`
			FairnessDelay uint32 `json:"fairness_delay"`
		} `json:"stages_us"`
	}
	for {
		var res struct {
			Results json.RawMessage `json:"results"`
			Total   int             `json:"total"`
		}
		if st := callAPI(t, e.base, adminKey, "GET", "/api/admin/audit/search?model="+ollamaModel+"&status=completed&limit=100", nil, &res); st != 200 {
			t.Fatalf("search: %d", st)
		}
		if res.Total >= 13 {
			if err := json.Unmarshal(res.Results, &rows); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Since(ended) > 15*time.Second {
			t.Fatalf("%d of 13 records after 15 s", res.Total)
		}
		time.Sleep(50 * time.Millisecond)
	}
	delayed := 0
	for _, r := range rows {
		if r.StagesUs.FairnessDelay > r.StagesUs.Queue {
			t.Errorf("%s: fairness delay %d µs > queue wait %d µs", r.User, r.StagesUs.FairnessDelay, r.StagesUs.Queue)
		}
		if r.User == "heavy" && r.StagesUs.FairnessDelay > 0 {
			delayed++
		}
	}
	if delayed == 0 {
		t.Errorf("no heavy request has a fairness delay though light's overtook the queued ones: %+v", rows)
	}
}
