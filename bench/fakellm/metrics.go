package fakellm

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Prometheus metrics in vLLM's names and labels (V1 engine: labels
// model_name and engine). Counters are live: running and waiting requests,
// token counts, finished requests by reason, and TTFT / end-to-end latency
// histograms with vLLM's buckets. Ollama has no /metrics endpoint, so the
// Ollama engine answers 404 there, as Ollama does; use Server.Stats instead.

// vLLM's histogram buckets (vllm/v1/metrics/loggers.py).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	e2eBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
		60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// histogram is a lock-free Prometheus histogram of durations.
type histogram struct {
	bounds   []float64
	counts   []atomic.Uint64 // per bucket, not cumulative; last is +Inf
	sumNanos atomic.Int64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

func (h *histogram) observe(d time.Duration) {
	sec := d.Seconds()
	i := 0
	for i < len(h.bounds) && sec > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNanos.Add(int64(d))
}

func (s *Server) serveMetrics(ctx *fasthttp.RequestCtx) {
	bp := getBuf()
	b := *bp
	capacity := float64(s.cfg.MaxConcurrent)
	if capacity == 0 {
		capacity = 256 // vLLM's default max_num_seqs
	}

	gauge := func(name, help string, val func(*modelState) float64) {
		b = metaLines(b, name, help, "gauge")
		for _, ms := range s.models {
			b = sample(b, name, ms.name, "", "", val(ms))
		}
	}
	counter := func(name, help string, val func(*modelState) float64) {
		b = metaLines(b, name, help, "counter")
		for _, ms := range s.models {
			b = sample(b, name, ms.name, "", "", val(ms))
		}
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
		func(ms *modelState) float64 { return float64(ms.running.Load()) })
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
		func(ms *modelState) float64 { return float64(ms.waiting.Load()) })
	usage := func(ms *modelState) float64 {
		u := float64(ms.running.Load()) / capacity
		if u > 1 {
			u = 1
		}
		return u
	}
	gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", usage)
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", usage)
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.",
		func(ms *modelState) float64 { return float64(ms.promptTokens.Load()) })
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.",
		func(ms *modelState) float64 { return float64(ms.genTokens.Load()) })

	b = metaLines(b, "vllm:request_success_total", "Count of successfully processed requests.", "counter")
	for _, ms := range s.models {
		b = sample(b, "vllm:request_success_total", ms.name, "finished_reason", "stop", float64(ms.finishStop.Load()))
		b = sample(b, "vllm:request_success_total", ms.name, "finished_reason", "length", float64(ms.finishLength.Load()))
		b = sample(b, "vllm:request_success_total", ms.name, "finished_reason", "abort", float64(ms.finishAbort.Load()))
	}

	hist := func(name, help string, h func(*modelState) *histogram) {
		b = metaLines(b, name, help, "histogram")
		for _, ms := range s.models {
			b = appendHistogram(b, name, ms.name, h(ms))
		}
	}
	hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
		func(ms *modelState) *histogram { return ms.ttft })
	hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
		func(ms *modelState) *histogram { return ms.e2e })

	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/plain; version=0.0.4; charset=utf-8")
	ctx.SetBody(b)
	*bp = b
	putBuf(bp)
}

func metaLines(b []byte, name, help, typ string) []byte {
	b = append(b, "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, help...)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, typ...)
	return append(b, '\n')
}

// labels appends {model_name="m",engine="0"[,k="v"]}.
func labels(b []byte, model, k, v string) []byte {
	b = append(b, `{model_name="`...)
	b = appendLabelValue(b, model)
	b = append(b, `",engine="0"`...)
	if k != "" {
		b = append(b, ',')
		b = append(b, k...)
		b = append(b, `="`...)
		b = appendLabelValue(b, v)
		b = append(b, '"')
	}
	return append(b, '}')
}

func sample(b []byte, name, model, k, v string, val float64) []byte {
	b = append(b, name...)
	b = labels(b, model, k, v)
	b = append(b, ' ')
	b = appendPromFloat(b, val)
	return append(b, '\n')
}

func appendHistogram(b []byte, name, model string, h *histogram) []byte {
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i].Load()
		le := "+Inf"
		if i < len(h.bounds) {
			le = strconv.FormatFloat(h.bounds[i], 'f', -1, 64)
			if le == strconv.Itoa(int(h.bounds[i])) {
				le += ".0"
			}
		}
		b = append(b, name...)
		b = append(b, "_bucket"...)
		b = labels(b, model, "le", le)
		b = append(b, ' ')
		b = appendPromFloat(b, float64(cum))
		b = append(b, '\n')
	}
	b = append(b, name...)
	b = append(b, "_count"...)
	b = labels(b, model, "", "")
	b = append(b, ' ')
	b = appendPromFloat(b, float64(cum))
	b = append(b, '\n')
	b = append(b, name...)
	b = append(b, "_sum"...)
	b = labels(b, model, "", "")
	b = append(b, ' ')
	b = appendPromFloat(b, float64(h.sumNanos.Load())/1e9)
	return append(b, '\n')
}

// appendPromFloat writes v as Python's prometheus_client does ("3.0").
func appendPromFloat(b []byte, v float64) []byte { return appendPyFloat(b, v) }

func appendLabelValue(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '"':
			b = append(b, '\\', '"')
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, c)
		}
	}
	return b
}
