package gateway

import (
	"context"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// BenchmarkChat measures one request through the whole gateway (auth,
// translator and adapter plugins as .wasm, backend hop to fakellm) over
// loopback; compare with BenchmarkDirect, the same request straight to
// fakellm, for the gateway's added cost.
func BenchmarkChat(b *testing.B) {
	t := &testing.T{}
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "log: {level: warn}\n")
	body := []byte(`{"model":"` + vllmModel + `","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about gateways"}],"temperature":0.7,"max_tokens":64}`)
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"plain", body},
		{"stream", append(body[:len(body)-1:len(body)-1], `,"stream":true}`...)},
	} {
		b.Run("gateway/"+tc.name, func(b *testing.B) {
			benchPost(b, e.base+"/v1/chat/completions", tc.body, "Bearer "+adminKey)
		})
		b.Run("direct/"+tc.name, func(b *testing.B) {
			benchPost(b, e.vllmURL+"/v1/chat/completions", tc.body, "")
		})
	}
}

// BenchmarkChatQuota is BenchmarkChat/gateway/plain for a user whose
// limits are all on (RPM, concurrency, token budget; far from reached),
// with the counters in memory (one gateway) and in Redis (leased to the
// replica): the cost of quotas on the request path, beside "unlimited"
// (the admin key: no limit to check) in the same run.
func BenchmarkChatQuota(b *testing.B) {
	t := &testing.T{}
	body := []byte(`{"model":"` + vllmModel + `","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about gateways"}],"temperature":0.7,"max_tokens":64}`)
	limits := map[string]any{"rpm_limit_override": 1000000, "max_concurrent_override": 1000, "token_budget_override": int64(1e15)}
	for _, tc := range []struct{ name, yaml string }{
		{"memory", ""},
		{"redis", redisYAML(testsvc.StartRedis(b))},
	} {
		e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "log: {level: warn}\n"+tc.yaml)
		_, k := newUser(b, e.base, "bench", "staff", limits, nil)
		b.Run(tc.name+"/unlimited", func(b *testing.B) {
			benchPost(b, e.base+"/v1/chat/completions", body, "Bearer "+adminKey)
		})
		b.Run(tc.name+"/limited", func(b *testing.B) {
			benchPost(b, e.base+"/v1/chat/completions", body, "Bearer "+k.FullKey)
		})
	}
}

func benchPost(b *testing.B, url string, body []byte, authz string) {
	c := &fasthttp.Client{}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	req.SetRequestURI(url)
	req.Header.SetMethod("POST")
	req.Header.SetContentType("application/json")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	req.SetBody(body)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Do(req, resp); err != nil || resp.StatusCode() != 200 {
			b.Fatalf("%v %d %s", err, resp.StatusCode(), resp.Body())
		}
	}
}

// BenchmarkPluginOps times each plugin call of one non-streamed chat
// request (.wasm, trusted), with the payloads the gateway really passes.
func BenchmarkPluginOps(b *testing.B) {
	t := &testing.T{}
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "log: {level: warn}\n")
	ctx := context.Background()
	body := []byte(`{"model":"` + vllmModel + `","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about gateways"}],"temperature":0.7,"max_tokens":64}`)
	tr, ad := e.gw.Host.Plugin("openai"), e.gw.Host.Plugin("vllm")
	var res pluginhost.Result
	call := func(p *pluginhost.Plugin, op abi.Op, meta, payload []byte) []byte {
		if err := p.Call(ctx, op, pluginhost.CallInput{Meta: meta, Payload: payload}, &res); err != nil {
			b.Fatal(err)
		}
		return append([]byte(nil), res.Payload...)
	}
	route := abi.AppendMeta(nil, "route", "chat")
	canonReq := call(tr, abi.OpRequestDecode, route, body)
	backendReq := call(ad, abi.OpRequestEncode, nil, canonReq)
	c := &fasthttp.Client{}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	req.SetRequestURI(e.vllmURL + "/v1/chat/completions")
	req.Header.SetMethod("POST")
	req.SetBody(backendReq)
	if err := c.Do(req, resp); err != nil {
		b.Fatal(err)
	}
	backendResp := append([]byte(nil), resp.Body()...)
	canonResp := call(ad, abi.OpResponseDecode, nil, backendResp)
	respMeta := abi.AppendMeta(abi.AppendMeta(route, "id", "chatcmpl-x"), "model", vllmModel)
	for _, op := range []struct {
		name          string
		p             *pluginhost.Plugin
		op            abi.Op
		meta, payload []byte
	}{
		{"openai/request_decode", tr, abi.OpRequestDecode, route, body},
		{"vllm/request_encode", ad, abi.OpRequestEncode, nil, canonReq},
		{"vllm/response_decode", ad, abi.OpResponseDecode, nil, backendResp},
		{"openai/response_encode", tr, abi.OpResponseEncode, respMeta, canonResp},
		{"openai/error_encode", tr, abi.OpErrorEncode, route, []byte(`{"status":404,"type":"not_found","message":"no"}`)},
	} {
		b.Run(op.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				call(op.p, op.op, op.meta, op.payload)
			}
		})
	}
	// The four calls of one request in sequence: measured at 2–3× the sum
	// of the calls above (see bench/RESULTS.md, "plugin calls in sequence").
	b.Run("request", func(b *testing.B) {
		for b.Loop() {
			call(tr, abi.OpRequestDecode, route, body)
			call(ad, abi.OpRequestEncode, nil, canonReq)
			call(ad, abi.OpResponseDecode, nil, backendResp)
			call(tr, abi.OpResponseEncode, respMeta, canonResp)
		}
	})
	// One op with the CPU caches cold: 8 MiB of other memory traffic
	// between calls, as other plugins and the host cause in production.
	b.Run("openai/request_decode/cold-cache", func(b *testing.B) {
		other := make([]byte, 8<<20)
		for b.Loop() {
			b.StopTimer()
			for i := range other {
				other[i] = byte(i)
			}
			b.StartTimer()
			call(tr, abi.OpRequestDecode, route, body)
		}
	})
}
