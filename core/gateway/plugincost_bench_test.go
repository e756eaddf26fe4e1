package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// BenchmarkChatPlugins is one serial OpenAI chat → vLLM (fakellm) on each
// way of loading the first-party plugins: "separate" (the modules of
// BuildPlugins, the canonical path: four calls a request, and the set
// every other gateway benchmark and test runs on), "bundle" (the default
// plugins.yaml's: two fused calls, the openai×vllm patch) and
// "native-bundle" (the same code compiled into the gateway: the floor).
// Audit off, so the figures are the plugins' and the handler's.
// cpu-µs/op is the process's CPU (client and fakellm included);
// plugin-µs/op the host's own clock around the plugin calls
// (mindrouter_plugin_call_duration_seconds), calls/op and inst/op the
// plugin calls and instantiations per request, from the host's metrics.
func BenchmarkChatPlugins(b *testing.B) {
	t := &testing.T{}
	body := []byte(`{"model":"` + vllmModel + `","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about gateways"}],"temperature":0.7,"max_tokens":64}`)
	stream := append(body[:len(body)-1:len(body)-1], `,"stream":true}`...)
	for _, ps := range pluginSets(t) {
		if ps.name == "native-separate" {
			continue
		}
		e := startEnvPlugins(t, context.Background(), ps.set, fakellm.Config{}, fakellm.Config{}, "log: {level: warn}\naudit: {enabled: false}\n")
		for _, req := range []struct {
			name string
			body []byte
		}{{"plain", body}, {"stream", stream}} {
			b.Run(ps.name+"/"+req.name, func(b *testing.B) {
				m0, c0 := pluginTotals(e), processCPU()
				benchPost(b, e.base+"/v1/chat/completions", req.body, "Bearer "+adminKey)
				c1, m1 := processCPU(), pluginTotals(e)
				n := float64(b.N)
				b.ReportMetric(float64(c1-c0)/n/1e3, "cpu-µs/op")
				b.ReportMetric((m1.seconds-m0.seconds)*1e6/n, "plugin-µs/op")
				b.ReportMetric((m1.calls-m0.calls)/n, "calls/op")
				b.ReportMetric((m1.inst-m0.inst)/n, "inst/op")
			})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = e.gw.Close(ctx)
		cancel()
	}
}

// pluginMetricTotals are the host's plugin metrics summed over plugins.
type pluginMetricTotals struct{ calls, seconds, inst float64 }

func pluginTotals(e *env) pluginMetricTotals {
	var b strings.Builder
	e.gw.Host.WriteMetrics(&b)
	var m pluginMetricTotals
	for _, line := range strings.Split(b.String(), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		v, _ := metricValue(line, line[:i])
		switch {
		case strings.HasPrefix(line, "mindrouter_plugin_calls_total{"):
			m.calls += v
		case strings.HasPrefix(line, "mindrouter_plugin_call_duration_seconds_sum{"):
			m.seconds += v
		case strings.HasPrefix(line, "mindrouter_plugin_instantiations_total{"):
			m.inst += v
		}
	}
	return m
}
