package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

type auditRecord struct {
	RequestID        string          `json:"request_id"`
	Status           string          `json:"status"` // started until the request's finished row is written
	User             string          `json:"user"`
	Model            string          `json:"model"`
	Backend          string          `json:"backend"`
	StatusCode       int             `json:"status_code"`
	ClientIP         string          `json:"client_ip"`
	UserAgent        string          `json:"user_agent"`
	Stream           bool            `json:"is_streaming"`
	PromptTokens     int             `json:"prompt_tokens"`
	CompletionTokens int             `json:"completion_tokens"`
	TTFTMs           float64         `json:"ttft_ms"`
	RequestBody      string          `json:"request_body"`
	ResponseBody     string          `json:"response_body"`
	Decision         json.RawMessage `json:"decision"`
	StagesUs         struct {
		Queue         uint32 `json:"queue"`
		Respond       uint32 `json:"respond"`
		FairnessDelay uint32 `json:"fairness_delay"`
		StreamPlugin  uint32 `json:"stream_plugin"`
	} `json:"stages_us"`
}

// waitAudit polls the admin API until the request's record is there
// (the bound: 5 s after the request ended).
func waitAudit(t *testing.T, base, id string, ended time.Time) auditRecord {
	t.Helper()
	for {
		var rec auditRecord
		st := callAPI(t, base, adminKey, "GET", "/api/admin/audit/"+id, nil, &rec)
		if st == 200 && rec.Status != "started" { // the row written at admission: the finished one follows
			if d := time.Since(ended); d > 5*time.Second {
				t.Errorf("the record of %s arrived %v after the request", id, d)
			}
			return rec
		}
		if st != 404 && st != 200 || time.Since(ended) > 15*time.Second {
			t.Fatalf("audit record %s: status %d after %v", id, st, time.Since(ended))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Every request is on record, with who, what, where, tokens, timings,
// content and the scheduler's decision, readable through the admin API:
// from the embedded sink (make run) and from ClickHouse.
func TestAudit_EndToEnd(t *testing.T) {
	for _, sink := range []string{"embedded", "clickhouse"} {
		t.Run(sink, func(t *testing.T) {
			y := ""
			if sink == "clickhouse" {
				ch := testsvc.StartClickHouse(t)
				y = fmt.Sprintf("audit: {clickhouse: {addr: [%q], database: %q}}\n", ch.Addr, ch.Database)
			}
			e := startEnv(t, fakellm.Config{}, fakellm.Config{}, y)
			_, k := newUser(t, e.base, "hana", "staff", nil, nil)
			ctx := context.Background()
			var hdr http.Header
			c := openai.NewClient(option.WithBaseURL(e.base+"/v1/"), option.WithAPIKey(k.FullKey), option.WithMaxRetries(0),
				option.WithHeader("User-Agent", "audit-test/1.0"),
				option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
					res, err := next(r)
					if res != nil {
						hdr = res.Header
					}
					return res, err
				}))
			resp, err := c.Chat.Completions.New(ctx, chatParams(vllmModel, "Record me, please"))
			if err != nil {
				t.Fatal(err)
			}
			rec := waitAudit(t, e.base, hdr.Get("X-Request-ID"), time.Now())
			if rec.User != "hana" || rec.Model != vllmModel || rec.Backend != "gpu1-vllm" || rec.StatusCode != 200 ||
				rec.ClientIP != "127.0.0.1" || rec.UserAgent != "audit-test/1.0" || rec.Stream ||
				rec.PromptTokens != int(resp.Usage.PromptTokens) || rec.CompletionTokens != int(resp.Usage.CompletionTokens) {
				t.Errorf("record: %+v", rec)
			}
			if !strings.Contains(rec.RequestBody, "Record me, please") || !strings.Contains(rec.ResponseBody, resp.Choices[0].Message.Content) {
				t.Errorf("content: request %q response %q", rec.RequestBody, rec.ResponseBody)
			}
			var d struct {
				Chosen     string            `json:"chosen"`
				Candidates []json.RawMessage `json:"candidates"`
			}
			if err := json.Unmarshal(rec.Decision, &d); err != nil || d.Chosen != "gpu1-vllm" || len(d.Candidates) == 0 {
				t.Errorf("decision %s: %v", rec.Decision, err)
			}
			if st := rec.StagesUs; st.StreamPlugin != 0 || st.FairnessDelay > st.Queue {
				t.Errorf("not a stream: stages %+v (stream plugin time 0, fairness delay within the queue's)", st)
			}

			p := chatParams(ollamaModel, "Stream me")
			s := c.Chat.Completions.NewStreaming(ctx, p)
			for s.Next() {
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			rec = waitAudit(t, e.base, hdr.Get("X-Request-ID"), time.Now())
			if !rec.Stream || rec.Backend != "gpu2-ollama" || rec.TTFTMs <= 0 || !strings.Contains(rec.ResponseBody, "data: ") {
				t.Errorf("stream record: %+v", rec)
			}
			// The stream's plugin calls are timed apart, as a part of respond.
			if st := rec.StagesUs; st.StreamPlugin == 0 || st.StreamPlugin > st.Respond || st.FairnessDelay > st.Queue {
				t.Errorf("stream stages %+v: want 0 < stream_plugin <= respond, fairness_delay <= queue", st)
			}
			// Search by user finds both.
			var res struct {
				Total int `json:"total"`
			}
			if st := callAPI(t, e.base, adminKey, "GET", "/api/admin/audit/search?user=hana", nil, &res); st != 200 || res.Total != 2 {
				t.Errorf("search by user: %d, total %d", st, res.Total)
			}
		})
	}
}

// The admin API is on record, but never its bodies: a new key is in one.
func TestAudit_AdminBodiesNotKept(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	_, k := newUser(t, e.base, "ines", "staff", nil, nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var res struct {
			Results []struct {
				RequestID string `json:"request_id"`
				Endpoint  string `json:"endpoint"`
			} `json:"results"`
		}
		callAPI(t, e.base, adminKey, "GET", "/api/admin/audit/search?limit=1000", nil, &res)
		found := 0
		for _, r := range res.Results {
			if r.Endpoint != "admin" {
				continue
			}
			found++
			var rec auditRecord
			callAPI(t, e.base, adminKey, "GET", "/api/admin/audit/"+r.RequestID, nil, &rec)
			if strings.Contains(rec.RequestBody+rec.ResponseBody, k.FullKey) || rec.ResponseBody != "" {
				t.Fatalf("an admin record keeps its bodies: %+v", rec)
			}
		}
		if found >= 2 { // the user and its key
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("admin calls not on record: %d found", found)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
