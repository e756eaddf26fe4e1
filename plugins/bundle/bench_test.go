package bundle

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// A typical OpenAI → vLLM exchange, natively: the canonical path (two calls
// on two modules with canonical JSON between them, as the gateway runs
// them today) against one fused call on the bundle. The host's work of
// laying out each call's input is counted on both sides (into reused
// buffers, as the host does).

// hostCall lays out a call into *buf (reused) and runs it.
func hostCall(b testing.TB, p *sdk.Plugin, op abi.Op, buf *[]byte, ti, ai uint16, flags uint32, state, meta, payload []byte) abi.Result {
	in := append((*buf)[:0], make([]byte, abi.HeaderSize)...)
	abi.PutHeader(in, abi.Header{Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(meta)),
		PayloadLen: uint32(len(payload)), Translator: ti, Adapter: ai})
	in = append(append(append(in, state...), meta...), payload...)
	*buf = in
	r, err := abi.ParseResult(p.Call(op, in))
	if err != nil || r.Status != abi.StatusOK {
		b.Fatalf("%s: %v %s %s", op, err, r.Status, r.Error)
	}
	return r
}

// streamBatch is 20 content events of a vLLM stream, mid-stream, with the
// adapter's and translator's state after the stream's first event.
func streamBatch(b testing.TB) (events, astate, tstate, fstate []byte) {
	for i := range 20 {
		ev := []byte(`{"id":"chatcmpl-8d1f0c2b6a4e4f7e9b3a2c1d0e9f8a7b","object":"chat.completion.chunk","created":1733000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"content":" word` +
			strconv.Itoa(i) + `"},"logprobs":null,"finish_reason":null}]}`)
		events = abi.AppendItem(events, ev)
	}
	first := abi.AppendItem(nil, []byte(`{"id":"chatcmpl-8d1f0c2b6a4e4f7e9b3a2c1d0e9f8a7b","object":"chat.completion.chunk","created":1733000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`))
	meta := metaList(headerMeta...)
	s := singles()
	var buf []byte
	dec := hostCall(b, s[VLLM], abi.OpStreamDecode, &buf, 0, 0, abi.FlagFirst, nil, nil, first)
	astate = bytes.Clone(dec.State)
	enc := hostCall(b, s[OpenAI], abi.OpStreamEncode, &buf, 0, 0, abi.FlagFirst, nil, meta, bytes.Clone(dec.Payload))
	tstate = bytes.Clone(enc.State)
	f := hostCall(b, New(), abi.OpFusedStream, &buf, OpenAI, VLLM, abi.FlagFirst, nil, meta, first)
	fstate = bytes.Clone(f.State)
	return events, astate, tstate, fstate
}

// fusedBundles are the bundle as shipped (fused: the openai×vllm patch
// serves these calls) and without the patch (fused-nopatch: the components
// run, canonical values passed as Go values).
var fusedBundles = []struct {
	name string
	new  func() *sdk.Plugin
}{
	{"fused", New},
	{"fused-nopatch", func() *sdk.Plugin { return sdk.NewBundle(Name, Version, parts()...) }},
}

func BenchmarkOpenAIToVLLM(b *testing.B) {
	req := read(b, filepath.Join("..", "openai/testdata/requests/basic.req.json"))
	resp := read(b, filepath.Join("..", "vllm/testdata/responses/plain.json"))
	route := metaList(routeMeta...)
	reqMeta := metaList(append(append([]string{}, routeMeta...), abi.MetaContextLength, "32768")...)
	ctxMeta := metaList(abi.MetaContextLength, "32768")
	hdr := metaList(headerMeta...)

	b.Run("request/canonical", func(b *testing.B) {
		s := singles()
		var b1, b2 []byte
		b.ReportAllocs()
		for b.Loop() {
			dec := hostCall(b, s[OpenAI], abi.OpRequestDecode, &b1, 0, 0, 0, nil, route, req)
			hostCall(b, s[VLLM], abi.OpRequestEncode, &b2, 0, 0, 0, nil, ctxMeta, dec.Payload)
		}
	})
	for _, f := range fusedBundles {
		b.Run("request/"+f.name, func(b *testing.B) {
			p := f.new()
			var b1 []byte
			b.ReportAllocs()
			for b.Loop() {
				hostCall(b, p, abi.OpFusedRequest, &b1, OpenAI, VLLM, 0, nil, reqMeta, req)
			}
		})
	}
	b.Run("response/canonical", func(b *testing.B) {
		s := singles()
		var b1, b2 []byte
		b.ReportAllocs()
		for b.Loop() {
			dec := hostCall(b, s[VLLM], abi.OpResponseDecode, &b1, 0, 0, 0, nil, nil, resp)
			hostCall(b, s[OpenAI], abi.OpResponseEncode, &b2, 0, 0, 0, nil, hdr, dec.Payload)
		}
	})
	for _, f := range fusedBundles {
		b.Run("response/"+f.name, func(b *testing.B) {
			p := f.new()
			var b1 []byte
			b.ReportAllocs()
			for b.Loop() {
				hostCall(b, p, abi.OpFusedResponse, &b1, OpenAI, VLLM, 0, nil, hdr, resp)
			}
		})
	}
	events, astate, tstate, fstate := streamBatch(b)
	b.Run("stream20/canonical", func(b *testing.B) {
		s := singles()
		var b1, b2 []byte
		b.ReportAllocs()
		for b.Loop() {
			dec := hostCall(b, s[VLLM], abi.OpStreamDecode, &b1, 0, 0, 0, astate, nil, events)
			hostCall(b, s[OpenAI], abi.OpStreamEncode, &b2, 0, 0, 0, tstate, hdr, dec.Payload)
		}
	})
	for _, f := range fusedBundles {
		b.Run("stream20/"+f.name, func(b *testing.B) {
			p := f.new()
			var b1 []byte
			b.ReportAllocs()
			for b.Loop() {
				hostCall(b, p, abi.OpFusedStream, &b1, OpenAI, VLLM, 0, fstate, hdr, events)
			}
		})
	}
}

// ollamaStreamBatch is 20 content lines of an Ollama /api/chat stream,
// mid-stream (each with its own created_at, as Ollama writes them), with
// the fused state after the stream's first line.
func ollamaStreamBatch(b testing.TB) (events, fstate []byte) {
	line := func(i int, content string) []byte {
		return []byte(`{"model":"llama3.2","created_at":"2025-10-26T17:15:24.` + strconv.Itoa(100000+i*11317) +
			`Z","message":{"role":"assistant","content":"` + content + `"},"done":false}`)
	}
	for i := range 20 {
		events = abi.AppendItem(events, line(i+1, " word"+strconv.Itoa(i)))
	}
	var buf []byte
	f := hostCall(b, New(), abi.OpFusedStream, &buf, OpenAI, Ollama, abi.FlagFirst, nil, metaList(headerMeta...),
		abi.AppendItem(nil, line(0, "The")))
	return events, bytes.Clone(f.State)
}

// BenchmarkOpenAIToOllama is OpenAI ← Ollama's response and a 20-line
// stream batch, fused: with the openai×ollama patch and without it.
func BenchmarkOpenAIToOllama(b *testing.B) {
	resp := read(b, filepath.Join("..", "ollama/testdata/response/text.ollama.json"))
	hdr := metaList(headerMeta...)
	events, fstate := ollamaStreamBatch(b)
	for _, f := range fusedBundles {
		b.Run("response/"+f.name, func(b *testing.B) {
			p := f.new()
			var b1 []byte
			b.ReportAllocs()
			for b.Loop() {
				hostCall(b, p, abi.OpFusedResponse, &b1, OpenAI, Ollama, 0, nil, hdr, resp)
			}
		})
		b.Run("stream20/"+f.name, func(b *testing.B) {
			p := f.new()
			var b1 []byte
			b.ReportAllocs()
			for b.Loop() {
				hostCall(b, p, abi.OpFusedStream, &b1, OpenAI, Ollama, 0, fstate, hdr, events)
			}
		})
	}
}
