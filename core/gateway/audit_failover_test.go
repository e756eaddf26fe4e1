package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// A request retried on another backend is recorded with the decision
// that sent it there: the admission row's JSON is written again after the
// failover's new admission, not reused.
func TestAudit_FailoverRecordsTheLastDecision(t *testing.T) {
	t.Parallel()
	p := startPair(t, fakellm.Config{}, fakellm.Config{ErrorRate: 1})
	p.gw.Reg.Backend("gpu1b-vllm").SetPriority(100) // tried first, fails, the request moves on
	var id string
	c := openai.NewClient(option.WithBaseURL(p.env.base+"/v1/"), option.WithAPIKey(adminKey), option.WithMaxRetries(0),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			res, err := next(r)
			if res != nil {
				id = res.Header.Get("X-Request-ID")
			}
			return res, err
		}))
	if _, err := c.Chat.Completions.New(context.Background(), chatParams(vllmModel, "fail over, then record")); err != nil {
		t.Fatal(err)
	}
	if p.b.Stats().Errors == 0 {
		t.Fatal("the failing backend was not tried: the test did not exercise failover")
	}
	rec := waitAudit(t, p.env.base, id, time.Now())
	var d struct {
		Chosen     string `json:"chosen"`
		Candidates []struct {
			Backend string `json:"backend"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(rec.Decision, &d); err != nil {
		t.Fatalf("decision %s: %v", rec.Decision, err)
	}
	if rec.Backend != "gpu1-vllm" || d.Chosen != "gpu1-vllm" {
		t.Errorf("row's backend %q, decision's chosen %q: want gpu1-vllm for both (decision %s)", rec.Backend, d.Chosen, rec.Decision)
	}
}
