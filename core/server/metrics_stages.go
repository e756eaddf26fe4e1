package server

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/outcome"
)

// stageBuckets start at 10 µs: most stages (auth, check, decode, encode)
// take micro-seconds, while admit and backend can take seconds.
var stageBuckets = []float64{0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Two parts of stages recorded besides outcome's stages: the stream's
// plugin calls (part of respond) and the fair-share order's delay (part
// of admit).
const (
	stageStreamPlugin = int(outcome.NumStages) + iota
	stageFairness
	numStageSeries
)

func stageName(i int) string {
	switch i {
	case stageStreamPlugin:
		return "stream_plugin"
	case stageFairness:
		return "fairness_delay"
	}
	return outcome.Stage(i).String()
}

// Token kinds, the mindrouter_tokens_total kind label.
const (
	tokPrompt = iota
	tokCompletion
	tokReasoning
	numTokKinds
)

var tokKindNames = [numTokKinds]string{"prompt", "completion", "reasoning"}

// stageMetrics are the per-stage, per-backend, first-token and token
// figures of finished requests.
type stageMetrics struct {
	stages  [numStageSeries]*histogram
	backend histVec                              // backend stage time by backend
	ttft    histVec                              // by route
	tokens  *labeled[[numTokKinds]atomic.Uint64] // by model
}

func newStageMetrics() *stageMetrics {
	m := &stageMetrics{backend: newHistVec(stageBuckets), ttft: newHistVec(buckets[:]),
		tokens: newLabeled(func() *[numTokKinds]atomic.Uint64 { return new([numTokKinds]atomic.Uint64) })}
	for i := range m.stages {
		m.stages[i] = newHistogram(stageBuckets)
	}
	return m
}

// observe records o's stages, backend time, TTFT and tokens. A stage of
// zero was not reached (the request ended before it) and is not counted.
// The backend label is a backend reg knows, else "none".
func (m *stageMetrics) observe(o *outcome.Outcome, reg *backend.Registry) {
	for i, d := range o.Stages {
		if d > 0 {
			m.stages[i].observe(d)
		}
	}
	if o.StreamPlugin > 0 {
		m.stages[stageStreamPlugin].observe(o.StreamPlugin)
	}
	if o.FairnessDelay > 0 {
		m.stages[stageFairness].observe(o.FairnessDelay)
	}
	if d := o.Stages[outcome.StageBackend]; d > 0 {
		name := o.Backend
		if name == "" || reg == nil || reg.Backend(name) == nil {
			name = "none"
		}
		m.backend.get(name).observe(d)
	}
	if o.TTFT > 0 {
		route := o.Route
		if route == "" {
			route = "none"
		}
		m.ttft.get(route).observe(o.TTFT)
	}
	u := &o.Usage
	if u.Prompt > 0 || u.Completion > 0 || u.Reasoning > 0 {
		c := m.tokenCounters(o.Model)
		c[tokPrompt].Add(uint64(max(u.Prompt, 0)))
		c[tokCompletion].Add(uint64(max(u.Completion, 0)))
		c[tokReasoning].Add(uint64(max(u.Reasoning, 0)))
	}
}

func (m *stageMetrics) tokenCounters(model string) *[numTokKinds]atomic.Uint64 {
	if model == "" {
		model = "none"
	}
	return m.tokens.get(model)
}

func (m *stageMetrics) write(w io.Writer) {
	const family = "mindrouter_stage_duration_seconds"
	fmt.Fprintf(w, "# HELP %s Time spent in each pipeline stage (stream_plugin is part of respond, fairness_delay part of admit).\n", family)
	fmt.Fprintf(w, "# TYPE %s histogram\n", family)
	for i, h := range m.stages {
		h.write(w, family, fmt.Sprintf("stage=%q", stageName(i)))
	}
	m.backend.write(w, "mindrouter_backend_duration_seconds", "backend",
		"Backend call time until the response headers (the whole body when not streamed), by backend.")
	m.ttft.write(w, "mindrouter_time_to_first_token_seconds", "route",
		"Time from request to a stream's first byte to the client, by route.")
	fmt.Fprintln(w, "# HELP mindrouter_tokens_total Tokens by kind and model, as the backends reported them.")
	fmt.Fprintln(w, "# TYPE mindrouter_tokens_total counter")
	m.tokens.each(func(model string, c *[numTokKinds]atomic.Uint64) {
		for k, kind := range tokKindNames {
			fmt.Fprintf(w, "mindrouter_tokens_total{kind=%q,model=%q} %d\n", kind, model, c[k].Load())
		}
	})
}
