package bundle

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/ollama"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// The openai×ollama patch (openaiOllama) against the full translation, as
// patch_test.go and patch_edge_test.go test openaiVLLM: every golden
// vector, every stream split, hand-written edge cases for each rule,
// structured mutations and fuzz targets, through the bundle with the patch
// and without it; results compared as JSON and byte for byte (compare).

func newOllamaPair() *patchPair {
	pt := newOpenAIOllama()
	ps := parts()
	ps[OpenAI] = ps[OpenAI].Patch("ollama", pt)
	return &patchPair{counts: &pt.handled, ai: Ollama, patched: sdk.NewBundle(Name, Version, ps...), full: sdk.NewBundle(Name, Version, parts()...)}
}

func usageMeta(inc string) []byte {
	return metaList(append(append([]string{}, headerMeta...), abi.MetaIncludeUsage, inc)...)
}

// The vectors the patch must take whole (every call of every split), so
// that a patch which declines everything fails.
var ollamaPatchStreams = map[string]bool{"stream/text.ndjson": true, "stream/length.ndjson": true, "stream/empty.ndjson": true}

var ollamaPatchResponses = map[string]bool{"response/text.ollama.json": true, "response/length.ollama.json": true, "response/json_format.ollama.json": true}

// The request vectors the patch must take (with some meta variant), so
// that a patch which declines everything fails.
var ollamaPatchRequests = map[string]bool{
	"vllm/testdata/requests/basic.json": true, "vllm/testdata/requests/conversation.json": true,
	"vllm/testdata/requests/stream_include_usage.json": true, "vllm/testdata/requests/think_high.json": true,
	"openai/testdata/requests/basic.req.json": true, "openai/testdata/requests/developer_parts.req.json": true, "openai/testdata/requests/nulls.req.json": true,
}

func TestOllamaPatch_Requests(t *testing.T) {
	pp := newOllamaPair()
	n, handled := 0, 0
	var fell []string
	for _, v := range requestVectors(t) {
		if v.ti != OpenAI {
			continue
		}
		took := false
		// Meta context_length becomes num_ctx; the operator's thinking
		// default applies to a request that does not say.
		for _, ctx := range []string{"", "32768", "0", "x"} {
			for _, think := range []string{"", "off", "on"} {
				kv := append([]string{}, routeMeta...)
				if ctx != "" {
					kv = append(kv, abi.MetaContextLength, ctx)
				}
				if think != "" {
					kv = append(kv, abi.MetaThinkDefault, think)
				}
				h, d := pp.request(t, metaList(kv...), v.body)
				if d != "" {
					t.Errorf("%s ctx=%s think_default=%s: %s", v.name, ctx, think, d)
				}
				took = took || h
			}
		}
		n++
		if took {
			handled++
		} else {
			fell = append(fell, shortName(v.name))
		}
		for k := range ollamaPatchRequests {
			if strings.HasSuffix(v.name, k) && !took {
				t.Errorf("%s: the patch declined it", v.name)
			}
		}
	}
	if h, d := pp.request(t, metaList(abi.MetaRoute, "models"), read(t, "../openai/testdata/requests/basic.req.json")); h || d != "" {
		t.Errorf("models route: handled %v %s", h, d)
	}
	t.Logf("requests: the patch handled %d of %d vectors; full path for %s", handled, n, strings.Join(fell, ", "))
}

// ollamaReqEdges are request fields particular to Ollama's encoding, each
// put after a minimal valid request (with reqEdges, patch_edge_test.go).
var ollamaReqEdges = []string{
	`"stop":"a","temperature":0.5`, `"stop":["a","b"],"max_tokens":3`, `"stop":[""],"seed":1`, `"stop":["",""]`,
	`"stop":["a"],"top_k":2,"top_p":0.5,"min_p":0.1,"repetition_penalty":1.2,"frequency_penalty":1,"presence_penalty":-1,"seed":7,"max_completion_tokens":9`,
	`"repetition_penalty":1`, `"top_k":3`, `"seed":5`, `"max_completion_tokens":4`, `"top_p":0.25,"temperature":1.5`,
	`"think":"low","stream":true`, `"reasoning_effort":"none","stream":false`,
	`"tools":null,"tool_choice":null,"response_format":null`, `"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}}`,
	`"logprobs":false`, `"logprobs":true`, `"top_logprobs":0`, `"logprobs":false,"top_logprobs":0`, `"logprobs":false,"top_logprobs":1`,
	`"logprobs":false,"top_logprobs":0.0`, `"logprobs":false,"top_logprobs":null`, `"logprobs":false,"top_logprobs":21`, `"logprobs":null`, `"parallel_tool_calls":true,"user":"u"`,
	`"stream":true,"stream_options":{"include_usage":true,"x":1}`, `"keep_alive":"5m","options":{"num_ctx":5},"format":"json"`,
}

// ollamaReqMessages are messages arrays particular to Ollama's encoding.
var ollamaReqMessages = []string{
	`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"refusal","refusal":"c"}]}]`,
	`[{"role":"user","content":[{"type":"text","text":""},{"type":"text","text":""}]}]`,
	`[{"role":"user","content":[{"type":"text","text":"a\u0000\"\\"},{"type":"text","text":"\ud83d\ude00"}]}]`,
	`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]`,
	`[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]`,
	`[{"role":"system","content":"s"},{"role":"developer","content":"d"},{"role":"user","content":"u"},{"role":"assistant","content":"a"}]`,
	`[{"role":"assistant","content":null,"reasoning":"r"}]`, `[{"role":"assistant","reasoning_content":"\u00e9\/"}]`,
	`[{"role":"assistant","content":"x","reasoning":"","reasoning_content":null}]`,
	`[{"role":"assistant","content":"x","tool_calls":null,"function_call":null,"name":"n"}]`,
	`[{"role":"user","content":"x","reasoning":"r"}]`, `[{"role":"user","content":"x","tool_call_id":"c","tool_call_id":"d"}]`,
	`[{"role":"user","content":"\u2028\u2029<&>"}]`, `[{"role":"user","content":" \t"},{"role":"user","content":"x"}]`,
	`[{"role":"tool","content":"r","tool_call_id":"c","name":"f"}]`,
	`[{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","content":"r","tool_call_id":"c"}]`,
}

func TestOllamaPatch_EdgeRequests(t *testing.T) {
	pp := newOllamaPair()
	n, handled := 0, 0
	run := func(meta []byte, body string) {
		t.Helper()
		h, d := pp.request(t, meta, []byte(body))
		if d != "" {
			t.Errorf("%s\n%s", body, d)
		}
		n++
		if h {
			handled++
		}
	}
	for _, meta := range [][]byte{metaList(routeMeta...), metaList(append(append([]string{}, routeMeta...), abi.MetaContextLength, "4096")...)} {
		for _, e := range append(append([]string{}, reqEdges...), ollamaReqEdges...) {
			if e != "" {
				e = "," + e
			}
			run(meta, `{"model":"m","messages":[{"role":"user","content":"x"}]`+e+`}`)
		}
		for _, m := range append(append([]string{}, reqMessages...), ollamaReqMessages...) {
			run(meta, `{"model":"m","messages":`+m+`}`)
		}
		for _, m := range reqModels {
			run(meta, `{"model":`+m+`,"messages":[{"role":"user","content":"x"}]}`)
		}
		for _, b := range []string{``, `[]`, `"x"`, `{}`, `{"model":"m","messages":[{"role":"user","content":"x"}]} x`,
			` {"model":"m","messages":[{"role":"user","content":"x"}]} `, `{"model":"m","messages":[{"role":"user","content":"x"}],}`} {
			run(meta, b)
		}
	}
	// Without meta, a tool message of an earlier call and the route of
	// completions: the full path's answers.
	run(nil, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	run(metaList(abi.MetaRoute, "completions"), `{"model":"m","prompt":"x"}`)
	t.Logf("%d of %d handled", handled, n)
	if handled < n/3 {
		t.Errorf("the patch handled only %d of %d cases", handled, n)
	}
}

func TestOllamaPatch_Responses(t *testing.T) {
	pp := newOllamaPair()
	n, handled := 0, 0
	var fell []string
	for _, v := range responseVectors(t) {
		if v.ai != Ollama {
			continue
		}
		for _, meta := range [][]byte{metaList(headerMeta...), metaList(routeMeta...)} {
			h, d := pp.response(t, meta, v.body)
			if d != "" {
				t.Errorf("%s: %s", v.name, d)
			}
			if len(meta) > len(metaList(routeMeta...)) {
				n++
				if h {
					handled++
				} else {
					fell = append(fell, shortName(v.name))
				}
				if ollamaPatchResponses[shortName(v.name)] && !h {
					t.Errorf("%s: the patch declined", v.name)
				}
			} else if h {
				t.Errorf("%s: the patch took a response without the gateway's meta", v.name)
			}
		}
	}
	t.Logf("responses: the patch handled %d of %d; full path for %s", handled, n, strings.Join(fell, ", "))
}

func TestOllamaPatch_Streams(t *testing.T) {
	pp := newOllamaPair()
	rng := rand.New(rand.NewPCG(3, 7))
	vectors, whole, calls, handled := 0, 0, 0, 0
	var fell []string
	for _, v := range streamVectors(t) {
		if v.ai != Ollama {
			continue
		}
		vectors++
		vh, vc := 0, 0
		for _, usage := range []string{"0", "1"} {
			lead := [][][]byte{nil}
			for _, e := range v.events {
				lead = append(lead, [][]byte{e})
			}
			for i, batches := range append(splits(rng, v.events, 6), lead) {
				h, c, d := pp.stream(t, usageMeta(usage), batches)
				if d != "" {
					t.Errorf("%s include_usage=%s split %d: %s", v.name, usage, i, d)
				}
				vh, vc = vh+h, vc+c
			}
		}
		calls, handled = calls+vc, handled+vh
		if vh == vc {
			whole++
		} else {
			fell = append(fell, fmt.Sprintf("%s (%d of %d calls)", shortName(v.name), vh, vc))
		}
		if ollamaPatchStreams[shortName(v.name)] && vh != vc {
			t.Errorf("%s: the patch handled %d of %d calls, want all", v.name, vh, vc)
		}
	}
	t.Logf("streams: the patch handled every call of %d of %d vectors; %d of %d calls in all; full path for %s; %d events by the stream shape",
		whole, vectors, handled, calls, strings.Join(fell, ", "), pp.shaped)
	if pp.shaped == 0 {
		t.Error("no event was translated by a stream shape")
	}
}

// ollamaLines are single stream lines, each one rule away from a line the
// patch takes, run alone and among others.
var ollamaLines = []string{
	`{"message":{"role":"assistant","content":"a"},"done":false}`, `{"message":{"content":"a"}}`,
	`{"message":{"content":""},"done":false}`, `{"message":{"content":null}}`, `{"message":{"content":5}}`,
	`{"message":{"content":["a"]}}`, `{"message":{}}`, `{"message":null}`, `{"message":5}`, `{"message":"a"}`,
	`{"message":{"content":"a"},"message":{"content":"b"}}`, `{"message":{"content":"a","content":"b"}}`,
	`{"message":{"content":"a"},"done":null}`, `{"message":{"content":"a"},"done":0}`, `{"message":{"content":"a"},"done":"true"}`,
	`{"message":{"content":"a"},"done":true}`, `{"done":true}`, `{"done":true,"done_reason":"length"}`,
	`{"done":true,"done_reason":"load"}`, `{"done":true,"done_reason":""}`, `{"done":true,"done_reason":null}`,
	`{"done":true,"done_reason":5}`, `{"done":true,"done_reason":"\u006cength"}`, `{"done":true,"done_reason":"stop","done_reason":"length"}`,
	`{"message":{"content":"z"},"done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":4}`,
	`{"done":true,"prompt_eval_count":-3,"eval_count":1099511627777}`, `{"done":true,"prompt_eval_count":1099511627776}`,
	`{"done":true,"prompt_eval_count":3.0}`, `{"done":true,"prompt_eval_count":1e2}`, `{"done":true,"prompt_eval_count":"3"}`,
	`{"done":true,"prompt_eval_count":null,"eval_count":-0}`, `{"done":true,"eval_count":2,"eval_count":3}`,
	`{"done":true,"eval_count":12345678901234567890}`, `{"done":false,"eval_count":"x","done_reason":7}`,
	`{"message":{"content":"a","thinking":"t"}}`, `{"message":{"content":"a","thinking":""}}`,
	`{"message":{"content":"a","thinking":null}}`, `{"message":{"content":"a","thinking":5}}`, `{"message":{"thinking":"t"}}`,
	`{"message":{"content":"","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]}}`,
	`{"message":{"content":"a","tool_calls":[]}}`, `{"message":{"content":"a","tool_calls":[ ]}}`,
	`{"message":{"content":"a","tool_calls":null}}`, `{"message":{"content":"a","tool_calls":{}}}`,
	`{"message":{"content":"a","tool_calls":[{"function":{}}]}}`,
	`{"message":{"content":"a","images":["aGk="],"role":"assistant"}}`, `{"message":{"content":"a"},"logprobs":[]}`,
	`{"message":{"content":"a"},"logprobs":null}`, `{"message":{"content":"a"},"logprobs":{}}`,
	`{"message":{"content":"a"},"logprobs":[{"token":"a","logprob":-0.1}]}`,
	`{"error":"boom"}`, `{"error":{"message":"boom"}}`, `{"error":null,"message":{"content":"a"}}`, `{"error":""}`,
	`{"response":"gen","done":false}`, `{"response":null,"message":{"content":"a"}}`, `{"response":5,"message":{"content":"a"}}`,
	`{"model":"m","created_at":"2025-10-26T17:15:24.097767Z","message":{"role":"assistant","content":"a"},"done":false}`,
	`{"model":5,"created_at":7,"message":{"content":"a"}}`, `{"created_at":"x","created_at":"y","message":{"content":"a"}}`,
	`{"message":{"content":"<think>r</think>a"}}`, `{"message":{"content":"<thi"}}`, `{"message":{"content":"<"}}`,
	`{"message":{"content":"  a"}}`, `{"message":{"content":"   "}}`, `{"message":{"content":"  <think>r"}}`,
	`{"message":{"content":"\n<think>r"}}`, `{"message":{"content":"\u003cthink>r</think>a"}}`, `{"message":{"content":"\t a"}}`,
	`{"message":{"content":"a</think>b<think>"}}`, `{"message":{"content":"\u00e9\/\ud83d\ude00\u2028"}}`,
	`{"message":{"content":"\ud800"}}`, `{"message":{"content":"é\"x\\"}}`, `{"message":{"cont\u0065nt":"a"}}`,
	` {"message":{"content":"a"}} `, `{ "message" : { "content" : "a" } , "done" : false }`,
	`{"message":{"content":"a"}}x`, `{"message":{"content":"a"}`, `{`, `[]`, `5`, `null`, `[DONE]`, ``, `  `,
}

func TestOllamaPatch_EdgeStreams(t *testing.T) {
	pp := newOllamaPair()
	calls, handled := 0, 0
	run := func(meta []byte, batches [][][]byte) {
		t.Helper()
		h, c, d := pp.stream(t, meta, batches)
		if d != "" {
			var b strings.Builder
			for _, bt := range batches {
				b.WriteString("[")
				for _, e := range bt {
					b.WriteString(string(e) + " | ")
				}
				b.WriteString("] ")
			}
			t.Errorf("%s\n%s", b.String(), d)
		}
		calls, handled = calls+c, handled+h
	}
	text := []byte(`{"model":"m","created_at":"2025-10-26T17:15:24.097767Z","message":{"role":"assistant","content":"hi"},"done":false}`)
	empty := []byte(`{"model":"m","message":{"role":"assistant","content":""},"done":false}`)
	done := []byte(`{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":4}`)
	for _, inc := range []string{"0", "1"} {
		meta := usageMeta(inc)
		for _, e := range ollamaLines {
			ev := []byte(e)
			run(meta, [][][]byte{{ev}})
			run(meta, [][][]byte{{empty}, {ev}, {text, ev}, {done}})
			run(meta, [][][]byte{{ev, empty, ev, done, text}})
			run(meta, [][][]byte{{text}, {ev}})
			run(meta, [][][]byte{{text}, {ev, done}})
		}
	}
	// The template fast path: lines that share all bytes but created_at's
	// and the content's with one the full scan read.
	pre := `{"model":"m","created_at":"`
	mid := `","message":{"role":"assistant","content":"`
	suf := `"},"done":false}`
	holes := []string{``, `a`, `a\"b`, `a"b`, `a\`, `\\`, `\u00e9`, `\u00E9`, `\ud800`, `\ud83d\ude00`, `a","content":"b`,
		"\n", "é", "\u2028", `\/`, `\x`, "\xff", `<think>`, ` <`, `  `, `a"},"done":true,"x":{"a":"`, `a"},"done":false,"thinking":"`,
		`a","created_at":"b`, `a","message":{"content":"b`}
	for _, inc := range []string{"0", "1"} {
		meta := usageMeta(inc)
		for _, h1 := range holes {
			for _, h2 := range []string{"x", "2025-10-26T17:15:24Z", h1} {
				a := []byte(pre + h2 + mid + h1 + suf)
				b := []byte(pre + h1 + mid + h2 + suf)
				base := []byte(pre + "2025" + mid + "base" + suf)
				run(meta, [][][]byte{{base, a, b, base}})
				run(meta, [][][]byte{{a, base, b}})
				run(meta, [][][]byte{{base}, {a}, {b}, {done}})
			}
		}
		// One hole: no created_at, or created_at after the content.
		for _, h1 := range holes {
			a := []byte(`{"message":{"content":"` + h1 + `"},"created_at":"t"}`)
			base := []byte(`{"message":{"content":"base"},"created_at":"t"}`)
			run(meta, [][][]byte{{base, a, base}})
			a = []byte(`{"message":{"content":"` + h1 + `"}}`)
			run(meta, [][][]byte{{text, a}, {[]byte(`{"message":{"content":"base"}}`), a}})
		}
	}

	// Without the gateway's header meta, on another route, and with odd
	// states.
	evs := [][][]byte{{text}, {done}}
	run(metaList(abi.MetaModel, "m"), evs)
	run(metaList(abi.MetaID, "i", abi.MetaModel, "m", abi.MetaCreated, "-1"), evs)
	run(metaList(append(withRoute(headerMeta, "/v1/completions"), abi.MetaIncludeUsage, "1")...), evs)
	meta := metaList(headerMeta...)
	for _, as := range [][]byte{nil, ollamaPlain, ollamaPlainDone, ollamaStartDone, ollama.PatchState(false, false),
		{1, 1, 0}, {2, 1, 0, 3, 0, 0}, {2, 1, 1, 3, 0, 0}, {2, 0, 0, 3, 0, 0}, {2, 1, 0, 0, 0, 1, ' '}, {9}} {
		for _, ts := range [][]byte{nil, {1, 0, 0, 0, 0}, {1, 1, 0, 0, 0}, {1, 2, 0, 0, 0}, {1, 3, 0, 0, 0},
			{1, 1, 1, 1, 0}, {1, 1, 0, 0, 1}, {1, 0, 0, 0, 0, 9}, {2}} {
			for _, started := range []bool{false, true} {
				st := []byte{1, 0}
				if started {
					st[1] = 1
				}
				st = append(append(append(st, byte(len(as))), as...), ts...)
				for _, f := range []uint32{0, abi.FlagFirst, abi.FlagEnd} {
					for _, e := range [][]byte{text, done, empty, []byte(`{"message":{"content":" <"}}`)} {
						got := do(t, pp.patched, abi.OpFusedStream, input(OpenAI, Ollama, f, st, meta, list([][]byte{e})))
						want := do(t, pp.full, abi.OpFusedStream, input(OpenAI, Ollama, f, st, meta, list([][]byte{e})))
						if d := compare(got, want, true); d != "" {
							t.Errorf("state %x flags %b event %s: %s", st, f, e, d)
						}
					}
				}
			}
		}
	}
	t.Logf("%d of %d calls handled", handled, calls)
}

// The states the patch writes are ollama's own: a plain stream, one line
// per call, stays on the patch through every call, and so does its done
// line; content that opens a <think> block is left to the full path.
func TestOllamaPatch_StreamStates(t *testing.T) {
	pp := newOllamaPair()
	line := func(content string, done bool) []byte {
		return []byte(fmt.Sprintf(`{"model":"m","created_at":"2025-10-26T17:15:24.0%dZ","message":{"role":"assistant","content":%q},"done":%v}`,
			len(content), content, done))
	}
	meta := usageMeta("1")
	plain := [][][]byte{{line("", false)}, {line(" The", false)}, {line(" sky", false)}, {line("<think>", false)}, {line("", true)}}
	if h, c, d := pp.stream(t, meta, plain); d != "" || h != c {
		t.Errorf("plain: handled %d of %d calls: %s", h, c, d)
	}
	think := [][][]byte{{line("<think>", false)}, {line("r", false)}, {line("</think>a", false)}, {line("b", false)}, {line("", true)}}
	h, c, d := pp.stream(t, meta, think)
	if d != "" {
		t.Error(d)
	}
	if h != 0 {
		t.Errorf("think: the patch handled %d of %d calls, want none", h, c)
	}
	// After the full path has seen the first content, the state is
	// ollama.PatchState(true, false) and the patch takes over.
	late := [][][]byte{{line("  ", false)}, {line("a", false)}, {line("b", false)}, {line("", true)}}
	if h, c, d := pp.stream(t, meta, late); d != "" || h != c-2 {
		t.Errorf("late: handled %d of %d calls, want all but the first two: %s", h, c, d)
	}
}

func TestOllamaPatch_EdgeResponses(t *testing.T) {
	pp := newOllamaPair()
	meta := metaList(headerMeta...)
	n, handled := 0, 0
	for _, e := range ollamaLines {
		for _, body := range []string{e, strings.Replace(e, `"done":false`, `"done":true`, 1),
			strings.Replace(e, `}`, `,"done_reason":"length","prompt_eval_count":2}`, 1)} {
			h, d := pp.response(t, meta, []byte(body))
			if d != "" {
				t.Errorf("%s: %s", body, d)
			}
			n++
			if h {
				handled++
			}
		}
	}
	t.Logf("%d of %d responses handled", handled, n)
}

// TestOllamaPatch_Mutations runs random variations of Ollama's golden
// vectors through both paths.
func TestOllamaPatch_Mutations(t *testing.T) {
	pp := newOllamaPair()
	rng := rand.New(rand.NewPCG(17, 19))
	rounds := 60
	if testing.Short() {
		rounds = 10
	}
	var resps, lines [][]byte
	for _, v := range responseVectors(t) {
		if v.ai == Ollama {
			resps = append(resps, v.body)
		}
	}
	var streams [][][]byte
	for _, v := range streamVectors(t) {
		if v.ai == Ollama {
			streams = append(streams, v.events)
			lines = append(lines, v.events...)
		}
	}
	hdr := usageMeta("1")
	var nResp, hResp, nCalls, hCalls int
	for range rounds {
		for _, body := range resps {
			m := mutate(rng, body, resps)
			h, d := pp.response(t, hdr, m)
			if d != "" {
				t.Fatalf("response %s\n%s", m, d)
			}
			nResp++
			if h {
				hResp++
			}
		}
		for _, events := range streams {
			var evs [][]byte
			for _, e := range events {
				if rng.IntN(3) == 0 {
					e = mutate(rng, e, lines)
				}
				evs = append(evs, e)
			}
			for _, batches := range splits(rng, evs, 1)[1:] {
				h, c, d := pp.stream(t, hdr, batches)
				if d != "" {
					t.Fatalf("stream %q\n%s", evs, d)
				}
				nCalls, hCalls = nCalls+c, hCalls+h
			}
		}
	}
	t.Logf("mutations: patch handled %d of %d responses, %d of %d stream calls", hResp, nResp, hCalls, nCalls)
}

// TestOllamaPatch_RequestMutations runs random variations of the OpenAI
// request vectors through both paths.
func TestOllamaPatch_RequestMutations(t *testing.T) {
	pp := newOllamaPair()
	rng := rand.New(rand.NewPCG(23, 29))
	rounds := 40
	if testing.Short() {
		rounds = 8
	}
	var reqs [][]byte
	for _, v := range requestVectors(t) {
		if v.ti == OpenAI {
			reqs = append(reqs, v.body)
		}
	}
	meta := metaList(append(append([]string{}, routeMeta...), abi.MetaContextLength, "8192")...)
	var nReq, hReq int
	for range rounds {
		for _, body := range reqs {
			m := mutate(rng, body, reqs)
			h, d := pp.request(t, meta, m)
			if d != "" {
				t.Fatalf("request %s\n%s", m, d)
			}
			nReq++
			if h {
				hReq++
			}
		}
	}
	t.Logf("mutations: patch handled %d of %d requests", hReq, nReq)
}

func FuzzOllamaPatchRequest(f *testing.F) {
	for _, v := range requestVectors(f) {
		if v.ti == OpenAI {
			f.Add(v.body)
		}
	}
	pp := newOllamaPair()
	meta := metaList(append(append([]string{}, routeMeta...), abi.MetaContextLength, "2048")...)
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, d := pp.request(t, meta, body); d != "" {
			t.Fatal(d)
		}
	})
}

func FuzzOllamaPatchResponse(f *testing.F) {
	for _, v := range responseVectors(f) {
		if v.ai == Ollama {
			f.Add(v.body)
		}
	}
	pp := newOllamaPair()
	hdr := metaList(headerMeta...)
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, d := pp.response(t, hdr, body); d != "" {
			t.Fatal(d)
		}
	})
}

// FuzzOllamaPatchStream takes an NDJSON body (framed as the host frames
// it), a batch size and whether the client asked for usage.
func FuzzOllamaPatchStream(f *testing.F) {
	for _, v := range streamVectors(f) {
		if v.ai != Ollama {
			continue
		}
		b := bytes.Join(v.events, []byte("\n"))
		f.Add(b, uint8(1), true)
		f.Add(b, uint8(3), false)
	}
	pp := newOllamaPair()
	f.Fuzz(func(t *testing.T, body []byte, size uint8, usage bool) {
		u := "0"
		if usage {
			u = "1"
		}
		events := frameNDJSON(body)
		n := int(size%8) + 1
		var batches [][][]byte
		for len(events) > 0 {
			k := min(n, len(events))
			batches = append(batches, events[:k])
			events = events[k:]
		}
		if _, _, d := pp.stream(t, usageMeta(u), batches); d != "" {
			t.Fatal(d)
		}
	})
}
