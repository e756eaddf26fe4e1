package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

const dashboardPath = "../../deploy/grafana/mindrouter-dashboard.json"

// grafanaDashboard is the part of Grafana's dashboard model the test reads.
type grafanaDashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Title      string `json:"title"`
		Type       string `json:"type"`
		Datasource struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		GridPos struct{ H, W, X, Y int } `json:"gridPos"`
		Targets []struct {
			Expr  string `json:"expr"`
			RefID string `json:"refId"`
		} `json:"targets"`
	} `json:"panels"`
}

var metricName = regexp.MustCompile(`mindrouter_[a-z_]+`)

// dashboardFamilies checks the dashboard's shape and returns the metric
// families its panels query (a histogram's _bucket, _sum and _count are
// its family), sorted.
func dashboardFamilies(t *testing.T, raw []byte) []string {
	t.Helper()
	var d grafanaDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 {
		t.Errorf("dashboard title %q uid %q schemaVersion %d: want both set and schemaVersion >= 36", d.Title, d.UID, d.SchemaVersion)
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Query string `json:"query"`
	}) bool {
		return v.Name == "DS_PROMETHEUS" && v.Type == "datasource" && v.Query == "prometheus"
	}) {
		t.Error("no Prometheus datasource variable DS_PROMETHEUS")
	}
	if len(d.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	seen := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if p.Title == "" || p.Type == "" || len(p.Targets) == 0 {
			t.Errorf("panel %d %q: wants a title, a type and targets", p.ID, p.Title)
		}
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Datasource.UID != "${DS_PROMETHEUS}" {
			t.Errorf("panel %q: datasource %q, want ${DS_PROMETHEUS}", p.Title, p.Datasource.UID)
		}
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, p.GridPos)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			names := metricName.FindAllString(tg.Expr, -1)
			if len(names) == 0 || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: target %q (refId %q) wants a mindrouter metric and a unique refId", p.Title, tg.Expr, tg.RefID)
			}
			refs[tg.RefID] = true
			for _, n := range names {
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					n = strings.TrimSuffix(n, suf)
				}
				seen[n] = true
			}
		}
	}
	fams := make([]string, 0, len(seen))
	for n := range seen {
		fams = append(fams, n)
	}
	slices.Sort(fams)
	return fams
}

// missingFamilies returns the families that have no # TYPE line in a
// scrape.
func missingFamilies(fams []string, scrape string) []string {
	var out []string
	for _, f := range fams {
		if !strings.Contains(scrape, "# TYPE "+f+" ") {
			out = append(out, f)
		}
	}
	return out
}

// Every metric deploy/grafana's dashboard queries is one the gateway
// exports: a gateway with the audit, the plugin set and the Redis fleet
// on serves plain and streamed requests, and its scrape has a # TYPE line
// for every family a panel names.
func TestDashboard_MetricsExported(t *testing.T) {
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	fams := dashboardFamilies(t, raw)
	// The check can fail: a made-up family is reported missing.
	if m := missingFamilies([]string{"mindrouter_no_such_family"}, "# TYPE mindrouter_requests_total counter\n"); len(m) != 1 {
		t.Fatalf("missingFamilies does not report an unknown family: %v", m)
	}

	rd := testsvc.StartRedis(t)
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, fmt.Sprintf("redis: {addr: %q, db: %d}\n", rd.Addr, rd.DB))
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		if _, err := e.client.Chat.Completions.New(ctx, chatParams(model, "Count to three")); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		p := chatParams(model, "Count to five")
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		s := e.client.Chat.Completions.NewStreaming(ctx, p)
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			t.Fatalf("%s stream: %v", model, err)
		}
	}
	m := scrape(t, e.base+"/metrics", "")
	if missing := missingFamilies(fams, m); len(missing) > 0 {
		t.Errorf("the dashboard queries families /metrics does not export: %v", missing)
	}
	// The new series carry the requests just made.
	for _, series := range []string{
		`mindrouter_stage_duration_seconds_count{stage="backend"}`,
		`mindrouter_stage_duration_seconds_count{stage="decode"}`,
		`mindrouter_backend_duration_seconds_count{backend="gpu1-vllm"}`,
		`mindrouter_backend_duration_seconds_count{backend="gpu2-ollama"}`,
		`mindrouter_time_to_first_token_seconds_count{route="chat"}`,
		fmt.Sprintf(`mindrouter_tokens_total{kind="completion",model=%q}`, vllmModel),
		fmt.Sprintf(`mindrouter_tokens_total{kind="prompt",model=%q}`, ollamaModel),
	} {
		if v, ok := metricValue(m, series); !ok || v <= 0 {
			t.Errorf("%s = %v (found %v), want > 0", series, v, ok)
		}
	}
	if _, ok := metricValue(m, fmt.Sprintf(`mindrouter_queue_waiting{model=%q}`, vllmModel)); !ok {
		t.Errorf("no queue gauge for %s", vllmModel)
	}
}

// mindrouter_queue_waiting counts the requests the fair scheduler holds
// for a slot: eight at once against a backend of four slots whose answers
// take a while leave four waiting, and none once they are served.
func TestMetrics_QueueWaiting(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, fakellm.Config{TTFT: 1500 * time.Millisecond}, "")
	series := fmt.Sprintf(`mindrouter_queue_waiting{model=%q}`, ollamaModel)
	if v, ok := metricValue(scrape(t, e.base+"/metrics", ""), series); !ok || v != 0 {
		t.Fatalf("idle: %s = %v (found %v), want 0", series, v, ok)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := e.client.Chat.Completions.New(context.Background(), chatParams(ollamaModel, "Wait"))
			errs <- err
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	var peak float64
	for time.Now().Before(deadline) && peak < 4 {
		v, _ := metricValue(scrape(t, e.base+"/metrics", ""), series)
		peak = max(peak, v)
		time.Sleep(20 * time.Millisecond)
	}
	// /status tells the same queue (it once summed backends' waiting
	// counts, which only least_loaded keeps: always 0 under fair).
	if peak == 4 {
		var st struct {
			Queue struct{ Waiting int } `json:"queue"`
		}
		if err := json.Unmarshal([]byte(scrape(t, e.base+"/status", "")), &st); err != nil {
			t.Fatal(err)
		}
		if st.Queue.Waiting != 4 {
			t.Errorf("/status queue.waiting = %d while 4 requests wait", st.Queue.Waiting)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if peak != 4 {
		t.Errorf("%s peaked at %v with 8 requests on 4 slots, want 4", series, peak)
	}
	if v, _ := metricValue(scrape(t, e.base+"/metrics", ""), series); v != 0 {
		t.Errorf("after the requests: %s = %v, want 0", series, v)
	}
}
