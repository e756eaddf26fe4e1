package bundle

import (
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// Hand-written edge cases for each rule the patch mirrors, through both
// paths (patchPair). Most pairs of cases differ by one value, so a rule
// the patch gets wrong shows as a difference, and a case it declines is
// still checked against the full path's error.

// reqEdges are request fields, each put after a minimal valid request.
var reqEdges = []string{
	``,
	`"reasoning_effort":"none"`, `"reasoning_effort":"minimal"`, `"reasoning_effort":"low"`, `"reasoning_effort":"medium"`,
	`"reasoning_effort":"high"`, `"reasoning_effort":"xhigh"`, `"reasoning_effort":"max"`, `"reasoning_effort":""`, `"reasoning_effort":5`,
	`"think":true`, `"think":false`, `"think":"low"`, `"think":"medium"`, `"think":"high"`, `"think":"x"`, `"think":1`, `"think":null`,
	`"thinking":true`, `"thinking":false`, `"thinking":{}`, `"thinking":{"type":"enabled"}`, `"thinking":{"type":"adaptive"}`,
	`"thinking":{"type":"disabled"}`, `"thinking":{"budget_tokens":0}`, `"thinking":{"budget_tokens":100}`,
	`"thinking":{"budget_tokens":100,"type":"disabled"}`, `"thinking":{"type":"x"}`, `"thinking":{"budget_tokens":-1}`,
	`"thinking":{"budget_tokens":null,"type":null}`, `"thinking":"x"`,
	`"chat_template_kwargs":{}`, `"chat_template_kwargs":{"enable_thinking":true}`, `"chat_template_kwargs":{"thinking":false}`,
	`"chat_template_kwargs":{"enable_thinking":null,"thinking":true}`, `"chat_template_kwargs":{"enable_thinking":1}`,
	`"chat_template_kwargs":{"enable_thinking":true,"thinking":1}`, `"chat_template_kwargs":{"other":1}`, `"chat_template_kwargs":[]`,
	`"chat_template_kwargs":{"enable_thinking":false},"reasoning_effort":"high"`,
	`"reasoning_effort":"high","chat_template_kwargs":{"enable_thinking":false}`,
	`"chat_template_kwargs":{"enable_thinking":false},"thinking":{"type":"enabled"}`,
	`"thinking":{"type":"enabled"},"think":false`, `"think":"high","reasoning_effort":"none"`,
	`"stream":true`, `"stream":false`, `"stream":null`, `"stream":1`,
	`"stream":true,"stream_options":{"include_usage":true}`, `"stream":true,"stream_options":{"include_usage":false}`,
	`"stream":true,"stream_options":{"include_usage":null}`, `"stream":true,"stream_options":{}`,
	`"stream":true,"stream_options":{"include_usage":1}`, `"stream":true,"stream_options":[]`, `"stream_options":{"include_usage":true}`,
	`"stream":true,"stream_options":{"include_usage":true,"include_usage":false}`, `"stream_options":null`,
	`"max_tokens":0`, `"max_tokens":1`, `"max_tokens":2147483647`, `"max_tokens":2147483648`, `"max_tokens":-1`,
	`"max_tokens":1.0`, `"max_tokens":1e3`, `"max_tokens":null`, `"max_tokens":"5"`,
	`"max_tokens":10,"max_completion_tokens":20`, `"max_completion_tokens":20,"max_tokens":0`, `"max_completion_tokens":null,"max_tokens":7`,
	`"temperature":0`, `"temperature":2`, `"temperature":2.1`, `"temperature":-0.1`, `"temperature":1e-7`, `"temperature":0.7`,
	`"temperature":"0.7"`, `"temperature":1E0`, `"temperature":0.30000000000000004`, `"temperature":1.00000000000000000001`,
	`"temperature":-0`, `"temperature":1.5e0`, `"temperature":0.123456789012345678901234`,
	`"top_p":1`, `"top_p":1.1`, `"top_p":0`, `"min_p":0.05`, `"min_p":2`, `"repetition_penalty":0`, `"repetition_penalty":1e-10`,
	`"repetition_penalty":1e9`, `"repetition_penalty":1e10`, `"repetition_penalty":1.1`, `"frequency_penalty":-2`,
	`"frequency_penalty":2`, `"frequency_penalty":-2.5`, `"presence_penalty":1e-7`, `"presence_penalty":-0.25`,
	`"top_k":-1`, `"top_k":-2`, `"top_k":0`, `"top_k":40`, `"top_k":2147483648`, `"top_k":1.5`, `"top_k":-0`,
	`"seed":0`, `"seed":-1`, `"seed":-12345678901`, `"seed":9223372036854775807`, `"seed":1e2`, `"seed":"1"`,
	`"n":1`, `"n":2`, `"n":0`, `"n":1.0`, `"n":null`,
	`"stop":""`, `"stop":"a"`, `"stop":[]`, `"stop":[""]`, `"stop":["a",""]`, `"stop":["a",null]`, `"stop":5`, `"stop":null`,
	`"stop":["\u00e9","\n"]`, `"stop":"\/"`,
	`"user":""`, `"user":"u"`, `"user":null`, `"user":5`, `"safety_identifier":"s"`, `"safety_identifier":"s","user":"u"`,
	`"user":"u","safety_identifier":"s"`, `"user":"","safety_identifier":"s"`, `"safety_identifier":5`,
	`"tools":[]`, `"tools":null`, `"tools":[{}]`, `"tools":[{"type":"function","function":{"name":"f"}}]`,
	`"tools":[{"function":{"name":"f"}}]`, `"tools":[{"type":null,"function":{"name":"f"}}]`, `"tools":[{"type":"x","function":{"name":"f"}}]`,
	`"tools":[{"type":"function","function":null}]`, `"tools":[{"type":"function","function":{"name":""}}]`,
	`"tools":[{"type":"function","function":{"name":5}}]`, `"tools":[{"type":"function","function":{"name":"f","description":""}}]`,
	`"tools":[{"type":"function","function":{"name":"f","description":"d\/é"}}]`, `"tools":[{"type":"function","function":{"name":"f","description":5}}]`,
	`"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]`, `"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]`,
	`"tools":[{"type":"function","function":{"name":"f","parameters":{ "a" : [ 1 , "b c" , {"\u0041":null} ] }}}]`,
	`"tools":[{"type":"function","function":{"name":"f","strict":true}},{"type":"function","function":{"name":"g","strict":false}}]`,
	`"tools":[{"type":"function","function":{"name":"f","strict":1}}]`, `"tools":[{"type":"function","function":{"name":"f"},"x":1}]`,
	`"tools":[{"type":"function","function":{"name":"f","name":"g"}}]`, `"tools":{}`, `"tools":[5]`,
	`"tool_choice":"auto"`, `"tool_choice":"none"`, `"tool_choice":"required"`, `"tool_choice":"x"`, `"tool_choice":"\u0061uto"`,
	`"tool_choice":{"type":"function","function":{"name":"f"}}`, `"tool_choice":{"name":"f"}`, `"tool_choice":{"type":"function","name":"f"}`,
	`"tool_choice":{"type":"function","function":null,"name":"f"}`, `"tool_choice":{"type":"function","function":"x"}`,
	`"tool_choice":{"type":"x"}`, `"tool_choice":{"function":{"name":"f"}}`, `"tool_choice":{"type":"function","function":{"name":""}}`,
	`"tool_choice":5`, `"tool_choice":null`,
	`"parallel_tool_calls":true`, `"parallel_tool_calls":false`, `"parallel_tool_calls":1`, `"parallel_tool_calls":null`,
	`"response_format":{"type":"text"}`, `"response_format":{"type":"json_object"}`, `"response_format":{"type":"json_schema","json_schema":{}}`,
	`"response_format":{"type":"json_schema"}`, `"response_format":{"type":"json_schema","json_schema":{"name":"","schema":true,"strict":false}}`,
	`"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":false,"strict":true}}`,
	`"response_format":{"type":"json_schema","json_schema":{"schema":[]}}`, `"response_format":{"type":"json_schema","json_schema":{"name":5}}`,
	`"response_format":{"type":"json_schema","json_schema":{"strict":1}}`, `"response_format":{"type":"x"}`, `"response_format":{}`,
	`"response_format":{"type":null}`, `"response_format":"x"`, `"response_format":{"type":"text","json_schema":5}`,
	`"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{ "type" : "object" },"description":"d"}}`,
	`"functions":[{"name":"f"}]`, `"function_call":"auto"`, `"functions":null,"function_call":null`,
	`"logprobs":true,"top_logprobs":2,"metadata":{"a":1},"store":true,"service_tier":"auto"`,
	`"model":"n"`, `"stream":true,"stream":true`, `"mod\u0065l":"x"`, `"x":[1,{"y":"\ud83d\ude00"}]`, `"x":"\ud800"`, `"x":1.`,
}

// reqMessages are messages arrays.
var reqMessages = []string{
	`[{"role":"user","content":"x"}]`, `[]`, `[5]`, `null`, `{}`, `[{"role":"user"}]`, `[{"role":"user","content":null}]`,
	`[{"role":"developer","content":"x"}]`, `[{"role":"function","content":"x","name":"f"}]`, `[{"role":"x","content":"x"}]`,
	`[{"role":5,"content":"x"}]`, `[{"role":"us\u0065r","content":"x"}]`, `[{"role":"user","content":""}]`, `[{"role":"user","content":[]}]`,
	`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"refusal","refusal":"b"}]}]`,
	`[{"role":"user","content":[{"type":"text"}]}]`, `[{"role":"user","content":[{"type":"text","text":null}]}]`,
	`[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]`, `[{"role":"user","content":[{"text":"a"}]}]`,
	`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]`,
	`[{"role":"user","content":[{"type":"text","text":"\u00e9\n"},{"type":"text","text":""}]}]`, `[{"role":"user","content":5}]`,
	`[{"role":"user","content":"x","name":""}]`, `[{"role":"user","content":"x","name":"n"}]`, `[{"role":"user","content":"x","name":5}]`,
	`[{"role":"user","content":"x","name":null}]`, `[{"role":"user","content":"x","tool_call_id":5,"tool_calls":5,"reasoning":5}]`,
	`[{"role":"assistant"}]`, `[{"role":"assistant","content":null}]`, `[{"role":"assistant","content":"","tool_calls":[]}]`,
	`[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]`,
	`[{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"f"}}]}]`,
	`[{"role":"assistant","content":"x","tool_calls":[{"id":"c","function":{"name":"f","arguments":""}}]}]`,
	`[{"role":"assistant","content":[],"tool_calls":[{"function":{"name":"f","arguments":"{\"a\":1}"}}]}]`,
	`[{"role":"assistant","content":[{"type":"text","text":""}],"tool_calls":[{"id":null,"type":null,"function":{"name":""}}]}]`,
	`[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]}]`,
	`[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":5}}]}]`,
	`[{"role":"assistant","tool_calls":[{"id":5,"function":{"name":"f"}}]}]`, `[{"role":"assistant","tool_calls":[{"type":"x","function":{"name":"f"}}]}]`,
	`[{"role":"assistant","tool_calls":[{"id":"c"}]}]`, `[{"role":"assistant","tool_calls":[{"function":{}}]}]`,
	`[{"role":"assistant","tool_calls":5}]`, `[{"role":"assistant","tool_calls":null,"function_call":{"name":"f"}}]`,
	`[{"role":"assistant","tool_calls":[],"function_call":{"name":"f"}}]`, `[{"role":"assistant","function_call":null,"content":"x"}]`,
	`[{"role":"assistant","content":"x","reasoning":"a"}]`, `[{"role":"assistant","content":"x","reasoning_content":"b"}]`,
	`[{"role":"assistant","content":"x","reasoning":"a","reasoning_content":"b"}]`, `[{"role":"assistant","content":"x","reasoning_content":"b","reasoning":"a"}]`,
	`[{"role":"assistant","content":"x","reasoning":"a","reasoning_content":""}]`, `[{"role":"assistant","content":"x","reasoning":5}]`,
	`[{"role":"tool","content":"r"}]`, `[{"role":"tool","content":"r","tool_call_id":null}]`, `[{"role":"tool","content":"r","tool_call_id":"c"}]`,
	`[{"role":"tool","content":"r","tool_call_id":5}]`, `[{"role":"system","content":"s"},{"role":"user","content":"u","content":"v"}]`,
}

var reqModels = []string{`"m"`, `""`, `5`, `null`, `"m\u0041"`, `"é"`, `"\u2028"`}

func TestPatch_EdgeRequests(t *testing.T) {
	pp := newPatchPair()
	meta := metaList(routeMeta...)
	n, handled := 0, 0
	run := func(body string) {
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
	for _, e := range reqEdges {
		if e != "" {
			e = "," + e
		}
		run(`{"model":"m","messages":[{"role":"user","content":"x"}]` + e + `}`)
	}
	for _, m := range reqMessages {
		run(`{"model":"m","messages":` + m + `}`)
	}
	for _, m := range reqModels {
		run(`{"model":` + m + `,"messages":[{"role":"user","content":"x"}]}`)
	}
	for _, b := range []string{``, `[]`, `"x"`, `{}`, `{"model":"m","messages":[{"role":"user","content":"x"}]} x`,
		` {"model":"m","messages":[{"role":"user","content":"x"}]} `, `{"model":"m","messages":[{"role":"user","content":"x"}],}`} {
		run(b)
	}
	t.Logf("%d of %d handled", handled, n)
}

var respMessages = []string{
	`{"role":"assistant","content":"x"}`, `{"role":"assistant","content":null}`, `{"role":"assistant","content":""}`, `{}`,
	`{"content":5}`, `{"content":[]}`, `{"content":[{"type":"text","text":"a"}]}`, `{"content":"<think>r</think>a"}`,
	`{"content":" \n<think>r"}`, `{"content":"r</think>a"}`, `{"content":"\u003cthink>r\u003c/think>a"}`, `{"content":"a<think>b</think>c"}`,
	`{"content":"a < b > c"}`, `{"content":"x","reasoning_content":""}`, `{"content":"x","reasoning_content":"r"}`,
	`{"content":"x","reasoning_content":null,"reasoning":null}`, `{"content":"x","reasoning":"r"}`, `{"content":"x","reasoning":5}`,
	`{"content":"x","tool_calls":[]}`, `{"content":"x","tool_calls":[ ]}`, `{"content":"x","tool_calls":null}`, `{"content":"x","tool_calls":5}`,
	`{"content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
	`{"content":"x","content":"y"}`, `{"content":"\u00e9\/\b\f\ud83d\ude00\u2028 \u001f"}`, `{"content":"\ud800"}`,
	`{"content":"x","refusal":null,"annotations":[],"audio":null,"function_call":null}`, `null`, `5`,
}

var respChoiceFields = []string{
	``, `,"finish_reason":null`, `,"finish_reason":""`, `,"finish_reason":"stop"`, `,"finish_reason":"length"`,
	`,"finish_reason":"tool_calls"`, `,"finish_reason":"function_call"`, `,"finish_reason":"content_filter"`,
	`,"finish_reason":"abort"`, `,"finish_reason":5`, `,"finish_reason":"st\u006fp"`, `,"index":0`, `,"index":1`, `,"index":-1`,
	`,"index":1.0`, `,"index":"0"`, `,"index":null`, `,"index":2147483648`, `,"logprobs":null`, `,"logprobs":{"content":[]}`,
	`,"stop_reason":null`, `,"stop_reason":128001`, `,"finish_reason":"stop","finish_reason":"length"`,
}

var respTops = []string{
	``, `,"usage":null`, `,"usage":{}`, `,"usage":5`, `,"usage":{"prompt_tokens":1}`,
	`,"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":0}`, `,"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":9}`,
	`,"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}`,
	`,"usage":{"prompt_tokens":3,"prompt_tokens_details":null,"completion_tokens_details":5}`, `,"usage":{"prompt_tokens":-1}`,
	`,"usage":{"prompt_tokens":1.5}`, `,"usage":{"prompt_tokens":"3"}`, `,"usage":{"prompt_tokens":2147483648}`,
	`,"usage":{"prompt_tokens":1,"prompt_tokens":2}`, `,"usage":{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}`,
	`,"error":{"message":"x"}`, `,"error":"x"`, `,"error":null`, `,"error":5`, `,"object":"error","message":"m"`, `,"object":"err\u006fr"`,
	`,"object":"chat.completion","prompt_logprobs":null,"prompt_token_ids":[1,2],"kv_transfer_params":null,"service_tier":null,"system_fingerprint":"x"`,
	`,"choices":[]`,
}

func TestPatch_EdgeResponses(t *testing.T) {
	pp := newPatchPair()
	n, handled := 0, 0
	run := func(meta []byte, body string) {
		t.Helper()
		h, d := pp.response(t, meta, []byte(body))
		if d != "" {
			t.Errorf("%s\n%s", body, d)
		}
		n++
		if h {
			handled++
		}
	}
	hdr := metaList(headerMeta...)
	head := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m"`
	for _, m := range respMessages {
		run(hdr, head+`,"choices":[{"index":0,"message":`+m+`,"finish_reason":"stop"}]}`)
	}
	for _, c := range respChoiceFields {
		run(hdr, head+`,"choices":[{"message":{"content":"x"}`+c+`}]}`)
	}
	for _, tp := range respTops {
		run(hdr, head+`,"choices":[{"index":0,"message":{"content":"x"},"finish_reason":"length"}]`+tp+`}`)
	}
	for _, b := range []string{head + `}`, head + `,"choices":null}`, head + `,"choices":5}`, head + `,"choices":[5]}`,
		head + `,"choices":[{"message":{"content":"a"}},{"message":{"content":"b"}}]}`, `[]`, `{`, head + `,"choices":[]} x`} {
		run(hdr, b)
	}
	body := head + `,"choices":[{"message":{"content":"x"}}]}`
	for _, m := range [][]string{
		{abi.MetaID, "i", abi.MetaModel, "m"},
		{abi.MetaID, "i", abi.MetaModel, "m", abi.MetaCreated, "01"},
		{abi.MetaID, "i", abi.MetaModel, "m", abi.MetaCreated, "x"},
		{abi.MetaID, "", abi.MetaModel, "m", abi.MetaCreated, "1"},
		{abi.MetaID, "i", abi.MetaModel, "", abi.MetaCreated, "1"},
		{abi.MetaID, "i\"\n\u2028", abi.MetaModel, "m\xff", abi.MetaCreated, "1"},
	} {
		run(metaList(m...), body)
	}
	t.Logf("%d of %d handled", handled, n)
}

// streamEvents are single events, run alone and among others.
var streamEvents = []string{
	`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`, `{"choices":[{"index":0,"delta":{"role":"assistant"}}]}`,
	`{"choices":[{"delta":{"role":""}}]}`, `{"choices":[{"delta":{"role":5}}]}`, `{"choices":[{"delta":{"role":"x","content":"a"}}]}`,
	`{"choices":[{"delta":{"content":"a"}}]}`, `{"choices":[{"delta":{"content":""}}]}`, `{"choices":[{"delta":{"content":5}}]}`,
	`{"choices":[{"delta":{"content":null}}]}`, `{"choices":[{"delta":{}}]}`, `{"choices":[{"delta":null,"finish_reason":"stop"}]}`,
	`{"choices":[{"delta":5}]}`, `{"choices":[{"finish_reason":"length"}]}`, `{"choices":[{"delta":{},"finish_reason":"abort"}]}`,
	`{"choices":[{"delta":{"content":"a"},"finish_reason":"tool_calls"}]}`, `{"choices":[{"delta":{},"finish_reason":""}]}`,
	`{"choices":[{"delta":{},"finish_reason":5}]}`, `{"choices":[{"index":1,"delta":{"content":"a"}}]}`,
	`{"choices":[{"index":-1,"delta":{"content":"a"}}]}`, `{"choices":[{"index":"1","delta":{"content":"a"}}]}`,
	`{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}`, `{"choices":[5]}`, `{"choices":5}`, `{"choices":[]}`,
	`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}`, `{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":1}}`,
	`{"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":1}}}`, `{"usage":null}`,
	`{"choices":[{"delta":{"reasoning_content":"r"}}]}`, `{"choices":[{"delta":{"reasoning":"r","content":"a"}}]}`,
	`{"choices":[{"delta":{"reasoning_content":"","reasoning":null,"content":"a"}}]}`,
	`{"choices":[{"delta":{"tool_calls":[]}}]}`, `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f"}}]}}]}`,
	`{"choices":[{"delta":{"content":"a"},"logprobs":{"content":[]}}]}`, `{"choices":[{"delta":{"content":"a"},"stop_reason":null,"x":1}]}`,
	`{"error":{"message":"boom"}}`, `{"object":"error","message":"old"}`, `{"error":null,"choices":[{"delta":{"content":"a"}}]}`,
	`{"choices":[{"delta":{"content":"\u00e9\/<think>\ud83d\ude00"}}]}`, `{"choices":[{"delta":{"content":"a","content":"b"}}]}`,
	`[DONE]`, ` [DONE] `, ``, `  `, `{`, `[]`, `5`,
	`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" w"},"logprobs":null,"finish_reason":null,"token_ids":null}],"prompt_token_ids":null,"kv_transfer_params":null}`,
}

func TestPatch_EdgeStreams(t *testing.T) {
	pp := newPatchPair()
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
	role := []byte(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
	text := []byte(`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`)
	usage := []byte(`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}`)
	done := []byte(`[DONE]`)
	for _, inc := range []string{"0", "1"} {
		meta := metaList(append(append([]string{}, headerMeta...), abi.MetaIncludeUsage, inc)...)
		for _, e := range streamEvents {
			ev := []byte(e)
			run(meta, [][][]byte{{ev}})
			run(meta, [][][]byte{{role}, {ev}, {text, ev, usage}, {done}})
			run(meta, [][][]byte{{ev, role, ev, done, text}})
			run(meta, [][][]byte{{text}, {ev}})
		}
	}
	// The template fast path: chunks that share all bytes but the
	// content's with one the full scan read.
	pre := `{"id":"chatcmpl-t","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"`
	suf := `"},"logprobs":null,"finish_reason":null}]}`
	for _, inc := range []string{"0", "1"} {
		meta := metaList(append(append([]string{}, headerMeta...), abi.MetaIncludeUsage, inc)...)
		for _, mid := range []string{``, `a`, `a\"b`, `a"b`, `a\`, `\\`, `\u00e9`, `\u00E9`, `\ud800`, `\ud83d\ude00`, `a","content":"b`,
			"\n", "é", "\u2028", `\/`, `\x`, "\xff", `"},"logprobs":null,"finish_reason":"stop"}]}{"a":"`, `a"},"logprobs":null,"finish_reason":"length`} {
			ev := []byte(pre + mid + suf)
			base := []byte(pre + "base" + suf)
			run(meta, [][][]byte{{base, ev, base}})
			run(meta, [][][]byte{{base}, {ev}, {done}})
		}
	}

	// Without the gateway's header meta, and with odd states.
	ev := [][][]byte{{role}, {text}, {done}}
	run(metaList(abi.MetaModel, "m"), ev)
	run(metaList(abi.MetaID, "i", abi.MetaModel, "m", abi.MetaCreated, "-1"), ev)
	meta := metaList(headerMeta...)
	stop := []byte(`{"choices":[{"delta":{},"finish_reason":"stop"}]}`)
	vllmTool := []byte{1, 1, 0, 0, 1} // vllm: one tool call (choice 0, tool 0) seen
	for _, as := range [][]byte{nil, vllmTool, {9}} {
		for _, ts := range [][]byte{nil, {1, 0, 0, 0, 0}, {1, 1, 0, 0, 0}, {1, 2, 0, 0, 0}, {1, 3, 0, 0, 0},
			{1, 1, 1, 1, 0}, {1, 1, 0, 0, 1}, {1, 0, 0, 0, 0, 9}, {2}} {
			for _, started := range []bool{false, true} {
				st := []byte{1, 0}
				if started {
					st[1] = 1
				}
				st = append(append(append(st, byte(len(as))), as...), ts...)
				for _, f := range []uint32{0, abi.FlagFirst, abi.FlagEnd} {
					for _, e := range [][]byte{text, stop, role} {
						got := do(t, pp.patched, abi.OpFusedStream, input(OpenAI, VLLM, f, st, meta, list([][]byte{e})))
						want := do(t, pp.full, abi.OpFusedStream, input(OpenAI, VLLM, f, st, meta, list([][]byte{e})))
						if d := compare(got, want, true); d != "" {
							t.Errorf("state %x flags %b event %s: %s", st, f, e, d)
						}
					}
				}
			}
		}
	}
	for _, st := range [][]byte{{1, 0}, {1, 2, 0}, {2, 0, 0}, {1, 0, 5, 1}} {
		got := do(t, pp.patched, abi.OpFusedStream, input(OpenAI, VLLM, 0, st, meta, list([][]byte{text})))
		want := do(t, pp.full, abi.OpFusedStream, input(OpenAI, VLLM, 0, st, meta, list([][]byte{text})))
		if d := compare(got, want, true); d != "" {
			t.Errorf("state %x: %s", st, d)
		}
	}
	t.Logf("%d of %d calls handled", handled, calls)
}

// A plain text stream stays on the patch through every call, one event per
// call (vllm's <think> splitter has marked the content plain, and the patch
// passes that state on), while a stream whose content opens a <think> block
// is left to the full path from that event on.
func TestPatch_StreamThinkSplitter(t *testing.T) {
	pp := newPatchPair()
	meta := metaList(append(append([]string{}, headerMeta...), abi.MetaIncludeUsage, "1")...)
	seen := 0
	for _, v := range streamVectors(t) {
		name := shortName(v.name)
		if v.ai != VLLM || (name != "streams/text.sse" && name != "streams/think_tags.sse") {
			continue
		}
		seen++
		var batches [][][]byte
		for _, e := range v.events {
			batches = append(batches, [][]byte{e})
		}
		h, c, d := pp.stream(t, meta, batches)
		if d != "" {
			t.Fatalf("%s: %s", name, d)
		}
		switch name {
		case "streams/text.sse":
			if h != c {
				t.Errorf("%s: the patch handled %d of %d calls, want all", name, h, c)
			}
		case "streams/think_tags.sse":
			// The role event is the patch's; "<th" is not.
			if h != 1 {
				t.Errorf("%s: the patch handled %d of %d calls, want only the first", name, h, c)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("found %d of the 2 vectors", seen)
	}
}

// strLen, which the stream and response patches count output with, is
// the length of what unescape writes, as the components count it.
func TestStrLen(t *testing.T) {
	for _, s := range []string{`""`, `"plain words"`, `"a\nb\t\"c\"\\ \/"`, `"\u00e9t\u00e9 \ud83d\ude00 \u2028"`, `"caf\u00e9 \u4e2d\u6587"`} {
		sc := scanner{b: []byte(s)}
		v, ok := sc.str()
		if !ok {
			t.Fatalf("%s: not a string", s)
		}
		if got, want := strLen(sc.b, v), len(unescape(nil, sc.b[v.a:v.b])); got != want {
			t.Errorf("%s: strLen %d, unescape writes %d bytes", s, got, want)
		}
	}
}

// A first content that starts with spaces and then text is plain to vllm's
// splitter, spaces and all: the patch takes it. Content of spaces only, or
// spaces before '<' or an escape, may still open a <think> block: the full
// path runs.
func TestPatch_StreamLeadingSpace(t *testing.T) {
	pp := newPatchPair()
	meta := metaList(headerMeta...)
	role := []byte(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
	chunk := func(s string) []byte { return []byte(`{"choices":[{"index":0,"delta":{"content":"` + s + `"}}]}`) }
	for _, c := range []struct {
		first string
		patch bool // the patch handles the call with the first content
	}{
		{" w", true}, {"   w", true}, {" é", true}, {strings.Repeat(" ", 300) + "w", true},
		{" ", false}, {"   ", false}, {" <think>r</think>a", false}, {" <", false}, {" \\n", false}, {" \\u003c", false},
		{"\\tw", false}, {"<think>", false},
	} {
		batches := [][][]byte{{role}, {chunk(c.first)}, {chunk("x")}, {chunk(" y"), []byte("[DONE]")}}
		h, calls, d := pp.stream(t, meta, batches)
		if d != "" {
			t.Errorf("first content %q: %s", c.first, d)
			continue
		}
		// Declined, the call with the first content goes to the full path
		// (the patch may take the later ones, once vllm's state is plain).
		if all := h == calls; all != c.patch {
			t.Errorf("first content %q: the patch handled %d of %d calls", c.first, h, calls)
		}
	}
}
