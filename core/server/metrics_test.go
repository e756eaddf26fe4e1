package server

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/outcome"
)

func metricsRegistry(t testing.TB) *backend.Registry {
	t.Helper()
	cfg := config.Default()
	cfg.Backends = []config.Backend{{Name: "gpu1", Engine: "vllm", URL: "http://127.0.0.1:1", MaxConcurrent: 2}}
	reg, err := backend.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// streamedOutcome is a finished stream that went through every stage.
func streamedOutcome(backendName, model string) *outcome.Outcome {
	o := &outcome.Outcome{Route: "chat", Model: model, Backend: backendName, Status: 200, Duration: 40 * time.Millisecond,
		TTFT: 30 * time.Millisecond, StreamPlugin: 200 * time.Microsecond, FairnessDelay: 20 * time.Microsecond,
		Usage: outcome.Usage{Prompt: 11, Completion: 7, Reasoning: 3, Reported: true}}
	for i := range o.Stages {
		o.Stages[i] = time.Duration(i+1) * 15 * time.Microsecond
	}
	o.Stages[outcome.StageBackend] = 25 * time.Millisecond
	return o
}

func TestMetrics_StagesBackendsTokens(t *testing.T) {
	reg := metricsRegistry(t)
	m := newMetrics()
	m.observeOutcome(streamedOutcome("gpu1", "qwen3-8b"), reg)
	m.observeOutcome(streamedOutcome("gpu1", "qwen3-8b"), reg)
	m.observeOutcome(streamedOutcome("gone", "qwen3-8b"), reg) // a backend the registry does not know
	// Refused at the key check: only auth ran; no backend, no tokens.
	refused := &outcome.Outcome{Route: "chat", Status: 401, Duration: time.Millisecond}
	refused.Stages[outcome.StageAuth] = 5 * time.Microsecond
	m.observeOutcome(refused, reg)
	var buf bytes.Buffer
	m.write(&buf, reg, 0)
	text := buf.String()
	want := map[string]string{
		`mindrouter_stage_duration_seconds_count{stage="auth"}`:                 "4",
		`mindrouter_stage_duration_seconds_count{stage="decode"}`:               "3",
		`mindrouter_stage_duration_seconds_count{stage="respond"}`:              "3",
		`mindrouter_stage_duration_seconds_count{stage="stream_plugin"}`:        "3",
		`mindrouter_stage_duration_seconds_count{stage="fairness_delay"}`:       "3",
		`mindrouter_backend_duration_seconds_count{backend="gpu1"}`:             "2",
		`mindrouter_backend_duration_seconds_count{backend="none"}`:             "1",
		`mindrouter_backend_duration_seconds_bucket{backend="gpu1",le="0.025"}`: "2",
		`mindrouter_backend_duration_seconds_bucket{backend="gpu1",le="0.01"}`:  "0",
		`mindrouter_time_to_first_token_seconds_count{route="chat"}`:            "3",
		`mindrouter_tokens_total{kind="prompt",model="qwen3-8b"}`:               "33",
		`mindrouter_tokens_total{kind="completion",model="qwen3-8b"}`:           "21",
		`mindrouter_tokens_total{kind="reasoning",model="qwen3-8b"}`:            "9",
		`mindrouter_backend_waiting{backend="gpu1"}`:                            "0",
		`mindrouter_requests_total{route="chat",code="401"}`:                    "1",
		// The refused request's 5 µs auth is in le=1e-05, the streams' 15 µs are not.
		`mindrouter_stage_duration_seconds_bucket{stage="auth",le="1e-05"}`: "1",
	}
	for series, v := range want {
		if got, ok := seriesValue(text, series); !ok || got != v {
			t.Errorf("%s = %q (found %v), want %s", series, got, ok, v)
		}
	}
	for _, fam := range []string{"mindrouter_stage_duration_seconds histogram", "mindrouter_backend_duration_seconds histogram",
		"mindrouter_time_to_first_token_seconds histogram", "mindrouter_tokens_total counter", "mindrouter_backend_waiting gauge"} {
		if !strings.Contains(text, "# TYPE "+fam+"\n") {
			t.Errorf("no # TYPE %s", fam)
		}
	}
}

// seriesValue finds one series' value in a scrape.
func seriesValue(text, series string) (string, bool) {
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v, true
		}
	}
	return "", false
}

// Made-up model names do not grow /metrics without bound: past maxLabels
// they fold into "other".
func TestMetrics_TokenModelsBounded(t *testing.T) {
	m := newMetrics()
	for i := range maxLabels + 50 {
		m.observeOutcome(streamedOutcome("", fmt.Sprintf("m%d", i)), nil)
	}
	var buf bytes.Buffer
	m.st.write(&buf)
	if n := strings.Count(buf.String(), `mindrouter_tokens_total{kind="prompt"`); n != maxLabels+1 {
		t.Errorf("%d prompt series, want %d (maxLabels and other)", n, maxLabels+1)
	}
	if got, _ := seriesValue(buf.String(), `mindrouter_tokens_total{kind="prompt",model="other"}`); got != fmt.Sprint(50*11) {
		t.Errorf("other prompt tokens %q, want %d", got, 50*11)
	}
}
