package gateway

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// BenchmarkChatAudit is BenchmarkChat/gateway on the default plugins (the
// bundle) with the audit off, on into the embedded sink (make run's), and
// on into ClickHouse, content kept (the default): the audit's added latency per request is the difference
// from "off". The recorder's own goroutines (group commit, batch writes)
// run beside the requests, so on a small machine their CPU shows here too;
// cpu-µs/op is the process's CPU (client, gateway, fakellm and the
// recorder, until its sink has flushed what the run spooled) per request,
// which other load on the machine disturbs less than the latency.
//
// Each case's gateway is closed before the next starts: a gateway left
// running (its health checks, discovery, the recorder's ticks) slowed
// the later cases, which the figures then blamed on the audit.
func BenchmarkChatAudit(b *testing.B) {
	t := &testing.T{}
	body := []byte(`{"model":"` + vllmModel + `","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about gateways"}],"temperature":0.7,"max_tokens":64}`)
	stream := append(body[:len(body)-1:len(body)-1], `,"stream":true}`...)
	// The default plugins.yaml's plugins: the bundle (two fused calls a
	// request, the openai×vllm patch), not the separate modules the other
	// gateway tests run on (four calls over canonical JSON, more
	// WebAssembly CPU a request: BenchmarkChatPlugins).
	bundle, err := testutil.BuildBundle()
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, yaml string }{
		{"off", "audit: {enabled: false}\n"},
		{"embedded", ""},
		{"clickhouse", "clickhouse"},
	} {
		y := tc.yaml
		if y == "clickhouse" {
			ch := testsvc.StartClickHouse(b)
			y = fmt.Sprintf("audit: {clickhouse: {addr: [%q], database: %q}}\n", ch.Addr, ch.Database)
		}
		e := startEnvPlugins(t, context.Background(), bundle, fakellm.Config{}, fakellm.Config{}, "log: {level: warn}\n"+y)
		for _, req := range []struct {
			name string
			body []byte
		}{{"plain", body}, {"stream", stream}} {
			b.Run(tc.name+"/"+req.name, func(b *testing.B) {
				c0 := processCPU()
				benchPost(b, e.base+"/v1/chat/completions", req.body, "Bearer "+adminKey)
				// Past the sink's flush interval (audit.flush_interval,
				// 1 s): the batch holding the run's last events is written.
				time.Sleep(1100 * time.Millisecond)
				b.ReportMetric(float64(processCPU()-c0)/float64(b.N)/1e3, "cpu-µs/op")
			})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = e.gw.Close(ctx)
		cancel()
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkChatAuditPaired measures the audit's added latency with the
// machine's other load cancelled out: a gateway with the audit off and
// one with it on (into the embedded sink or ClickHouse) run side by side
// in the process, and each iteration sends one request to each, in
// alternating order. off-µs and on-µs are the medians of each side's
// latencies, added-µs the median of the per-pair differences (on − off).
// Both gateways' background work runs throughout, so it burdens both
// sides alike; the recorder's goroutines are the on side's own.
func BenchmarkChatAuditPaired(b *testing.B) {
	t := &testing.T{}
	body := []byte(`{"model":"` + vllmModel + `","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about gateways"}],"temperature":0.7,"max_tokens":64}`)
	for _, sink := range []string{"embedded", "clickhouse"} {
		y := ""
		if sink == "clickhouse" {
			ch := testsvc.StartClickHouse(b)
			y = fmt.Sprintf("audit: {clickhouse: {addr: [%q], database: %q}}\n", ch.Addr, ch.Database)
		}
		off := startEnv(t, fakellm.Config{}, fakellm.Config{}, "log: {level: warn}\naudit: {enabled: false}\n")
		on := startEnv(t, fakellm.Config{}, fakellm.Config{}, "log: {level: warn}\n"+y)
		b.Run(sink, func(b *testing.B) {
			c := &fasthttp.Client{}
			reqs := [2]*fasthttp.Request{}
			for i, base := range [2]string{off.base, on.base} {
				r := fasthttp.AcquireRequest()
				r.SetRequestURI(base + "/v1/chat/completions")
				r.Header.SetMethod("POST")
				r.Header.SetContentType("application/json")
				r.Header.Set("Authorization", "Bearer "+adminKey)
				r.SetBody(body)
				reqs[i] = r
			}
			resp := fasthttp.AcquireResponse()
			do := func(i int) time.Duration {
				t0 := time.Now()
				if err := c.Do(reqs[i], resp); err != nil || resp.StatusCode() != 200 {
					b.Fatalf("%v %d %s", err, resp.StatusCode(), resp.Body())
				}
				return time.Since(t0)
			}
			var lat [2][]float64
			var diff []float64
			n := 0
			for b.Loop() {
				first := n % 2 // alternate which side goes first
				var d [2]time.Duration
				d[first] = do(first)
				d[1-first] = do(1 - first)
				for i := range d {
					lat[i] = append(lat[i], float64(d[i].Nanoseconds())/1e3)
				}
				diff = append(diff, float64((d[1]-d[0]).Nanoseconds())/1e3)
				n++
			}
			b.ReportMetric(median(lat[0]), "off-µs")
			b.ReportMetric(median(lat[1]), "on-µs")
			b.ReportMetric(median(diff), "added-µs")
		})
		for _, e := range []*env{off, on} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = e.gw.Close(ctx)
			cancel()
		}
	}
}

func median(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return s[len(s)/2]
}
