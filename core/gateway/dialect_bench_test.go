package gateway

import (
	"context"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// BenchmarkDialectOps compares the client dialects' plugin cost (.wasm,
// trusted, separate modules) on the same request through the vLLM adapter:
// "request" is a non-streamed request's four calls in sequence (decode,
// encode, backend response decode, client response encode), "chunk" one
// stream_encode call of one text delta in the middle of a stream.
func BenchmarkDialectOps(b *testing.B) {
	t := &testing.T{}
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "log: {level: warn}\n")
	ctx := context.Background()
	ad := e.gw.Host.Plugin("vllm")
	var res pluginhost.Result
	call := func(p *pluginhost.Plugin, op abi.Op, flags uint32, state, meta, payload []byte) ([]byte, []byte) {
		if err := p.Call(ctx, op, pluginhost.CallInput{Flags: flags, State: state, Meta: meta, Payload: payload}, &res); err != nil {
			b.Fatal(err)
		}
		return append([]byte(nil), res.Payload...), append([]byte(nil), res.State...)
	}
	msgs := `"messages":[{"role":"user","content":"Tell me about gateways"}]`
	for _, d := range []struct{ name, plugin, route, body string }{
		{"openai", "openai", "chat", `{"model":"` + vllmModel + `","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about gateways"}],"temperature":0.7,"max_tokens":64}`},
		{"anthropic", "anthropic", "messages", `{"model":"` + vllmModel + `","system":"Be brief.",` + msgs + `,"temperature":0.7,"max_tokens":64}`},
		{"ollama", "ollamaapi", "chat", `{"model":"` + vllmModel + `","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about gateways"}],"options":{"temperature":0.7,"num_predict":64},"stream":false}`},
	} {
		tr := e.gw.Host.Plugin(d.plugin)
		if tr == nil {
			b.Fatalf("plugin %s not loaded", d.plugin)
		}
		route := abi.AppendMeta(abi.AppendMeta(nil, abi.MetaRoute, d.route), abi.MetaKind, "chat")
		body := []byte(d.body)
		canonReq, _ := call(tr, abi.OpRequestDecode, 0, nil, route, body)
		backendReq, _ := call(ad, abi.OpRequestEncode, 0, nil, nil, canonReq)
		c := &fasthttp.Client{}
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI(e.vllmURL + "/v1/chat/completions")
		req.Header.SetMethod("POST")
		req.SetBody(backendReq)
		if err := c.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		backendResp := append([]byte(nil), resp.Body()...)
		canonResp, _ := call(ad, abi.OpResponseDecode, 0, nil, nil, backendResp)
		meta := abi.AppendMeta(abi.AppendMeta(abi.AppendMeta(route, abi.MetaID, "chatcmpl-0123456789abcdef0123456789abcdef"),
			abi.MetaModel, vllmModel), abi.MetaCreated, "1764496800")
		b.Run(d.name+"/request", func(b *testing.B) {
			for b.Loop() {
				call(tr, abi.OpRequestDecode, 0, nil, route, body)
				call(ad, abi.OpRequestEncode, 0, nil, nil, canonReq)
				call(ad, abi.OpResponseDecode, 0, nil, nil, backendResp)
				call(tr, abi.OpResponseEncode, 0, nil, meta, canonResp)
			}
		})
		first := canon.ChatChunk{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Role: canon.RoleAssistant, Content: "Gate"}}}}
		next := canon.ChatChunk{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "ways route"}}}}
		_, state := call(tr, abi.OpStreamEncode, abi.FlagFirst, nil, meta, abi.AppendItem(nil, first.AppendJSON(nil)))
		item := abi.AppendItem(nil, next.AppendJSON(nil))
		b.Run(d.name+"/chunk", func(b *testing.B) {
			for b.Loop() {
				call(tr, abi.OpStreamEncode, 0, state, meta, item)
			}
		})
	}
}
