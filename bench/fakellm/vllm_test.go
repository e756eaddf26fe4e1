package fakellm

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVLLMHealthVersionModels(t *testing.T) {
	_, url := startServer(t, Config{Models: []string{"qwen3-8b", "llama3.1-8b"}, MaxModelLen: 8192})
	code, hdr, body := get(t, url+"/health")
	if code != 200 || len(body) != 0 {
		t.Fatalf("/health = %d %q", code, body)
	}
	if hdr.Get("Server") != "uvicorn" {
		t.Errorf("Server header = %q, want uvicorn", hdr.Get("Server"))
	}
	code, _, body = get(t, url+"/version")
	if code != 200 || at(t, decode(t, body), "version") != DefaultVLLMVersion {
		t.Fatalf("/version = %d %s", code, body)
	}
	code, hdr, body = get(t, url+"/v1/models")
	if code != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("/v1/models = %d %s", code, hdr.Get("Content-Type"))
	}
	o := decode(t, body)
	if at(t, o, "object") != "list" {
		t.Errorf("object = %v", o["object"])
	}
	data := at(t, o, "data").([]any)
	if len(data) != 2 {
		t.Fatalf("want 2 models, got %d", len(data))
	}
	m := data[0].(obj)
	hasKeys(t, m, "id", "object", "created", "owned_by", "root", "parent", "max_model_len", "permission")
	if m["id"] != "qwen3-8b" || m["object"] != "model" || m["owned_by"] != "vllm" || m["parent"] != nil {
		t.Errorf("model card = %v", m)
	}
	if num(t, m["max_model_len"]) != 8192 {
		t.Errorf("max_model_len = %v", m["max_model_len"])
	}
	perm := at(t, m, "permission", 0).(obj)
	if perm["object"] != "model_permission" || !strings.HasPrefix(perm["id"].(string), "modelperm-") {
		t.Errorf("permission = %v", perm)
	}
}

func TestVLLMChatNonStream(t *testing.T) {
	s, url := startServer(t, Config{Tokens: 12})
	req := `{"model":"llama3.1-8b","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is a router?"}]}`
	code, hdr, body := post(t, url+"/v1/chat/completions", req)
	if code != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d %s: %s", code, hdr.Get("Content-Type"), body)
	}
	o := decode(t, body)
	hasKeys(t, o, "id", "object", "created", "model", "choices", "usage", "prompt_logprobs")
	if !strings.HasPrefix(o["id"].(string), "chatcmpl-") || len(o["id"].(string)) != len("chatcmpl-")+32 {
		t.Errorf("id = %v", o["id"])
	}
	if o["object"] != "chat.completion" || o["model"] != "llama3.1-8b" {
		t.Errorf("object/model = %v/%v", o["object"], o["model"])
	}
	ch := at(t, o, "choices", 0).(obj)
	hasKeys(t, ch, "index", "message", "logprobs", "finish_reason", "stop_reason")
	if ch["finish_reason"] != "stop" || ch["logprobs"] != nil || ch["stop_reason"] != nil {
		t.Errorf("choice = %v", ch)
	}
	msg := ch["message"].(obj)
	hasKeys(t, msg, "role", "content", "reasoning_content", "reasoning", "tool_calls")
	content := msg["content"].(string)
	if msg["role"] != "assistant" || countWords(content) != 12 || !strings.HasSuffix(content, ".") {
		t.Errorf("message = %v", msg)
	}
	if msg["reasoning_content"] != nil || msg["reasoning"] != nil {
		t.Errorf("unexpected reasoning: %v", msg)
	}
	u := o["usage"].(obj)
	hasKeys(t, u, "prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details")
	// "Be brief." = 2 words, "What is a router?" = 4 words, + 4 per message
	if num(t, u["prompt_tokens"]) != 14 || num(t, u["completion_tokens"]) != 12 || num(t, u["total_tokens"]) != 26 {
		t.Errorf("usage = %v", u)
	}

	// deterministic: same prompt, same text
	_, _, body2 := post(t, url+"/v1/chat/completions", req)
	if c2 := at(t, decode(t, body2), "choices", 0, "message", "content"); c2 != content {
		t.Errorf("not deterministic: %q vs %q", content, c2)
	}
	// the backend saw what we sent
	if got := string(s.LastBody("/v1/chat/completions")); got != req {
		t.Errorf("LastBody = %q", got)
	}
	st := s.Stats()
	if st.Requests["/v1/chat/completions"] != 2 || st.Completed != 2 || st.CompletionTokens != 24 {
		t.Errorf("stats = %+v", st)
	}
}

func TestVLLMChatMaxTokens(t *testing.T) {
	_, url := startServer(t, Config{Tokens: 20})
	for _, field := range []string{"max_tokens", "max_completion_tokens"} {
		_, _, body := post(t, url+"/v1/chat/completions",
			`{"model":"qwen3-8b","messages":[{"role":"user","content":"hi"}],"`+field+`":5}`)
		o := decode(t, body)
		if at(t, o, "choices", 0, "finish_reason") != "length" {
			t.Errorf("%s: finish_reason = %v", field, at(t, o, "choices", 0, "finish_reason"))
		}
		if n := num(t, at(t, o, "usage", "completion_tokens")); n != 5 {
			t.Errorf("%s: completion_tokens = %d", field, n)
		}
		if c := at(t, o, "choices", 0, "message", "content").(string); countWords(c) != 5 {
			t.Errorf("%s: content %q", field, c)
		}
	}
	// a limit above the natural length does not truncate
	_, _, body := post(t, url+"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":50}`)
	if fr := at(t, decode(t, body), "choices", 0, "finish_reason"); fr != "stop" {
		t.Errorf("finish_reason = %v", fr)
	}
	// over the context length: 400
	code, _, body := post(t, url+"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":40000}`)
	if code != 400 || at(t, decode(t, body), "error", "type") != "BadRequestError" {
		t.Errorf("oversized max_tokens: %d %s", code, body)
	}
	code, _, _ = post(t, url+"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":0}`)
	if code != 400 {
		t.Errorf("max_tokens 0: status %d", code)
	}
}

func TestVLLMChatStream(t *testing.T) {
	_, url := startServer(t, Config{Tokens: 6})
	req := `{"model":"qwen3-8b","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Tell me something"}]}`
	code, hdr, body := post(t, url+"/v1/chat/completions", req)
	if code != 200 || hdr.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("status %d %q", code, hdr.Get("Content-Type"))
	}
	chunks := sseChunks(t, body)
	// role, 6 tokens, finish, usage
	if len(chunks) != 9 {
		t.Fatalf("want 9 chunks, got %d: %s", len(chunks), body)
	}
	id := chunks[0]["id"]
	for _, c := range chunks {
		if c["object"] != "chat.completion.chunk" || c["id"] != id || c["model"] != "qwen3-8b" {
			t.Errorf("chunk header = %v", c)
		}
	}
	first := at(t, chunks[0], "choices", 0).(obj)
	if d := first["delta"].(obj); d["role"] != "assistant" || d["content"] != "" || len(d) != 2 {
		t.Errorf("first delta = %v", d)
	}
	var text strings.Builder
	for _, c := range chunks[1:7] {
		ch := at(t, c, "choices", 0).(obj)
		if ch["finish_reason"] != nil {
			t.Errorf("early finish: %v", ch)
		}
		text.WriteString(at(t, ch, "delta", "content").(string))
	}
	fin := at(t, chunks[7], "choices", 0).(obj)
	if fin["finish_reason"] != "stop" || at(t, fin, "delta", "content") != "" {
		t.Errorf("final chunk = %v", fin)
	}
	if _, ok := fin["stop_reason"]; !ok {
		t.Errorf("final chunk lacks stop_reason: %v", fin)
	}
	usage := chunks[8]
	if len(usage["choices"].([]any)) != 0 || num(t, at(t, usage, "usage", "completion_tokens")) != 6 {
		t.Errorf("usage chunk = %v", usage)
	}
	// same text as the non-streaming answer
	code, _, _ = post(t, url+"/v1/chat/completions", strings.Replace(req, `"stream":true`, `"stream":false`, 1))
	if code != 400 {
		t.Errorf("stream_options without stream: status %d, want 400 as vLLM", code)
	}
	_, _, nb := post(t, url+"/v1/chat/completions", strings.Replace(req, `"stream":true,"stream_options":{"include_usage":true}`, `"stream":false`, 1))
	if want := at(t, decode(t, nb), "choices", 0, "message", "content"); text.String() != want {
		t.Errorf("stream text %q != non-stream %q", text.String(), want)
	}

	// without include_usage: no usage chunk; truncated: last token carries "length"
	_, _, body = post(t, url+"/v1/chat/completions",
		`{"model":"qwen3-8b","stream":true,"max_tokens":3,"messages":[{"role":"user","content":"x"}]}`)
	chunks = sseChunks(t, body)
	if len(chunks) != 4 {
		t.Fatalf("want role + 3 tokens, got %d: %s", len(chunks), body)
	}
	last := at(t, chunks[3], "choices", 0).(obj)
	if last["finish_reason"] != "length" || at(t, last, "delta", "content") == "" {
		t.Errorf("last chunk = %v", last)
	}
}

func TestVLLMJSONMode(t *testing.T) {
	_, url := startServer(t, Config{})
	schema := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},
		"tags":{"type":"array","items":{"type":"string"}},"address":{"$ref":"#/$defs/addr"},"nick":{"type":["string","null"]},
		"score":{"type":"number"},"ok":{"type":"boolean"},"ignored":{"type":"string"}},
		"required":["name","age","tags","address","nick","score","ok"],
		"$defs":{"addr":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string","format":"date"}},"required":["city"]}}}`
	cases := map[string]string{
		"json_object": `"response_format":{"type":"json_object"}`,
		"json_schema": `"response_format":{"type":"json_schema","json_schema":{"name":"person","schema":` + schema + `}}`,
		"guided_json": `"guided_json":` + schema,
	}
	for name, rf := range cases {
		for _, stream := range []bool{false, true} {
			req := `{"model":"qwen3-8b","messages":[{"role":"user","content":"give json"}],` + rf
			var content string
			if stream {
				_, _, body := post(t, url+"/v1/chat/completions", req+`,"stream":true}`)
				chunks := sseChunks(t, body)
				var sb strings.Builder
				for _, c := range chunks[1 : len(chunks)-1] {
					sb.WriteString(at(t, c, "choices", 0, "delta", "content").(string))
				}
				if len(chunks) < 4 {
					t.Errorf("%s: JSON not streamed in pieces (%d chunks)", name, len(chunks))
				}
				content = sb.String()
			} else {
				_, _, body := post(t, url+"/v1/chat/completions", req+`}`)
				content = at(t, decode(t, body), "choices", 0, "message", "content").(string)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(content), &v); err != nil {
				t.Fatalf("%s stream=%v: content is not JSON: %q", name, stream, content)
			}
			if name == "json_object" {
				if _, ok := v["answer"].(string); !ok {
					t.Errorf("json_object: %v", v)
				}
				continue
			}
			if _, ok := v["name"].(string); !ok {
				t.Errorf("%s: name %v", name, v)
			}
			if age, ok := v["age"].(float64); !ok || age != math.Trunc(age) || age < 0 || age > 150 {
				t.Errorf("%s: age %v", name, v["age"])
			}
			if tags, ok := v["tags"].([]any); !ok || len(tags) == 0 {
				t.Errorf("%s: tags %v", name, v["tags"])
			}
			if city := v["address"].(map[string]any)["city"]; city == nil {
				t.Errorf("%s: address %v", name, v["address"])
			}
			if _, ok := v["nick"].(string); !ok {
				t.Errorf("%s: nick %v", name, v["nick"])
			}
			if _, ok := v["score"].(float64); !ok {
				t.Errorf("%s: score %v", name, v["score"])
			}
			if _, ok := v["ok"].(bool); !ok {
				t.Errorf("%s: ok %v", name, v["ok"])
			}
			if _, ok := v["ignored"]; ok {
				t.Errorf("%s: not-required property filled", name)
			}
		}
	}
}

func TestVLLMToolsStream(t *testing.T) {
	_, url := startServer(t, Config{})
	req := `{"model":"llama3.1-8b","stream":true,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[` +
		searchTool + `,` + weatherTool + `],"tool_choice":"auto"}`
	_, _, body := post(t, url+"/v1/chat/completions", req)
	chunks := sseChunks(t, body)
	var deltas []obj
	for _, c := range chunks[1:] {
		d := at(t, c, "choices", 0, "delta").(obj)
		if tc, ok := d["tool_calls"]; ok {
			deltas = append(deltas, tc.([]any)[0].(obj))
		}
	}
	if len(deltas) < 4 {
		t.Fatalf("want a header delta and >= 3 argument deltas, got %d: %s", len(deltas), body)
	}
	head := deltas[0]
	if num(t, head["index"]) != 0 || head["type"] != "function" || !strings.HasPrefix(head["id"].(string), "chatcmpl-tool-") {
		t.Errorf("first tool delta = %v", head)
	}
	if at(t, head, "function", "name") != "search" || at(t, head, "function", "arguments") != "" {
		t.Errorf("first tool delta function = %v", head["function"])
	}
	var args strings.Builder
	for _, d := range deltas[1:] {
		if _, ok := d["id"]; ok {
			t.Errorf("argument delta carries an id: %v", d)
		}
		if _, ok := d["function"].(obj)["name"]; ok {
			t.Errorf("argument delta carries a name: %v", d)
		}
		if num(t, d["index"]) != 0 {
			t.Errorf("argument delta index = %v", d["index"])
		}
		args.WriteString(at(t, d, "function", "arguments").(string))
	}
	var a map[string]any
	if err := json.Unmarshal([]byte(args.String()), &a); err != nil {
		t.Fatalf("reassembled arguments are not JSON: %q", args.String())
	}
	if _, ok := a["query"].(string); !ok || len(a) != 1 {
		t.Errorf("arguments = %v", a)
	}
	fin := at(t, chunks[len(chunks)-1], "choices", 0).(obj)
	if fin["finish_reason"] != "tool_calls" {
		t.Errorf("finish_reason = %v", fin["finish_reason"])
	}

	// named tool_choice picks that tool and finishes with "stop", as vLLM does
	req = `{"model":"llama3.1-8b","messages":[{"role":"user","content":"Weather?"}],"tools":[` + searchTool + `,` + weatherTool +
		`],"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`
	_, _, body = post(t, url+"/v1/chat/completions", req)
	o := decode(t, body)
	tc := at(t, o, "choices", 0, "message", "tool_calls", 0).(obj)
	if tc["type"] != "function" || at(t, tc, "function", "name") != "get_weather" || !strings.HasPrefix(tc["id"].(string), "chatcmpl-tool-") {
		t.Errorf("tool call = %v", tc)
	}
	if err := json.Unmarshal([]byte(at(t, tc, "function", "arguments").(string)), &a); err != nil {
		t.Fatalf("arguments: %v", err)
	}
	if a["unit"] != "celsius" || a["city"] == nil || a["days"] == nil {
		t.Errorf("arguments = %v", a)
	}
	if d := a["days"].(float64); d < 1 || d > 7 {
		t.Errorf("days %v outside [1,7]", d)
	}
	if fr := at(t, o, "choices", 0, "finish_reason"); fr != "stop" {
		t.Errorf("named tool finish_reason = %v", fr)
	}

	// auto, non-stream: finish tool_calls and content null
	_, _, body = post(t, url+"/v1/chat/completions", `{"model":"llama3.1-8b","messages":[{"role":"user","content":"x"}],"tools":[`+weatherTool+`]}`)
	o = decode(t, body)
	if at(t, o, "choices", 0, "finish_reason") != "tool_calls" || at(t, o, "choices", 0, "message", "content") != nil {
		t.Errorf("auto tool call: %s", body)
	}
	// tool_choice none: plain text
	_, _, body = post(t, url+"/v1/chat/completions", `{"model":"llama3.1-8b","messages":[{"role":"user","content":"x"}],"tools":[`+weatherTool+`],"tool_choice":"none"}`)
	o = decode(t, body)
	if at(t, o, "choices", 0, "finish_reason") != "stop" || len(at(t, o, "choices", 0, "message", "tool_calls").([]any)) != 0 {
		t.Errorf("tool_choice none: %s", body)
	}
	// unknown named tool: 400
	code, _, _ := post(t, url+"/v1/chat/completions", `{"model":"llama3.1-8b","messages":[{"role":"user","content":"x"}],"tools":[`+weatherTool+`],"tool_choice":{"type":"function","function":{"name":"nope"}}}`)
	if code != 400 {
		t.Errorf("unknown tool: status %d", code)
	}
}

func TestVLLMReasoning(t *testing.T) {
	_, url := startServer(t, Config{Tokens: 5, ReasoningTokens: 3})
	for _, on := range []string{`"chat_template_kwargs":{"enable_thinking":true}`, `"reasoning_effort":"low"`} {
		_, _, body := post(t, url+"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":"think"}],`+on+`}`)
		o := decode(t, body)
		msg := at(t, o, "choices", 0, "message").(obj)
		r, ok := msg["reasoning_content"].(string)
		if !ok || countWords(r) != 3 || msg["reasoning"] != r {
			t.Errorf("%s: reasoning = %v / %v", on, msg["reasoning_content"], msg["reasoning"])
		}
		if countWords(msg["content"].(string)) != 5 || num(t, at(t, o, "usage", "completion_tokens")) != 8 {
			t.Errorf("%s: %s", on, body)
		}
	}
	// streaming: reasoning deltas first, in both fields, then content
	_, _, body := post(t, url+"/v1/chat/completions",
		`{"model":"qwen3-8b","stream":true,"messages":[{"role":"user","content":"think"}],"chat_template_kwargs":{"enable_thinking":true}}`)
	chunks := sseChunks(t, body)
	var kinds []string
	for _, c := range chunks[1 : len(chunks)-1] {
		d := at(t, c, "choices", 0, "delta").(obj)
		switch {
		case d["reasoning_content"] != nil:
			if d["reasoning"] != d["reasoning_content"] {
				t.Errorf("reasoning fields differ: %v", d)
			}
			kinds = append(kinds, "r")
		case d["content"] != nil:
			kinds = append(kinds, "c")
		}
	}
	if got := strings.Join(kinds, ""); got != "rrrccccc" {
		t.Errorf("delta order = %q", got)
	}
	// non-reasoning model: no reasoning even when asked
	_, _, body = post(t, url+"/v1/chat/completions", `{"model":"llama3.1-8b","messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"enable_thinking":true}}`)
	if r := at(t, decode(t, body), "choices", 0, "message", "reasoning_content"); r != nil {
		t.Errorf("llama reasoning = %v", r)
	}
	// off by default
	_, _, body = post(t, url+"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":"x"}]}`)
	if r := at(t, decode(t, body), "choices", 0, "message", "reasoning_content"); r != nil {
		t.Errorf("default reasoning = %v", r)
	}
}

func TestVLLMCompletions(t *testing.T) {
	_, url := startServer(t, Config{Tokens: 30})
	_, _, body := post(t, url+"/v1/completions", `{"model":"qwen3-8b","prompt":"Once upon a time"}`)
	o := decode(t, body)
	if !strings.HasPrefix(o["id"].(string), "cmpl-") || o["object"] != "text_completion" {
		t.Errorf("header = %v", o)
	}
	ch := at(t, o, "choices", 0).(obj)
	hasKeys(t, ch, "index", "text", "logprobs", "finish_reason", "stop_reason")
	// the completions API defaults max_tokens to 16
	if countWords(ch["text"].(string)) != 16 || ch["finish_reason"] != "length" {
		t.Errorf("choice = %v", ch)
	}
	if num(t, at(t, o, "usage", "prompt_tokens")) != 4 {
		t.Errorf("usage = %v", o["usage"])
	}
	// list prompt: one choice each
	_, _, body = post(t, url+"/v1/completions", `{"model":"qwen3-8b","prompt":["a b","c d e"],"max_tokens":40}`)
	o = decode(t, body)
	chs := o["choices"].([]any)
	if len(chs) != 2 || num(t, at(t, chs[1], "index")) != 1 || at(t, chs[0], "finish_reason") != "stop" {
		t.Errorf("choices = %v", chs)
	}
	if num(t, at(t, o, "usage", "completion_tokens")) != 60 || num(t, at(t, o, "usage", "prompt_tokens")) != 5 {
		t.Errorf("usage = %v", o["usage"])
	}
	// stream
	_, _, body = post(t, url+"/v1/completions", `{"model":"qwen3-8b","prompt":"x","max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`)
	chunks := sseChunks(t, body)
	if len(chunks) != 5 {
		t.Fatalf("want 4 tokens + usage, got %d: %s", len(chunks), body)
	}
	for _, c := range chunks[:4] {
		if c["object"] != "text_completion" {
			t.Errorf("chunk = %v", c)
		}
	}
	if at(t, chunks[3], "choices", 0, "finish_reason") != "length" || num(t, at(t, chunks[4], "usage", "completion_tokens")) != 4 {
		t.Errorf("stream end: %s", body)
	}
}

func TestVLLMEmbeddings(t *testing.T) {
	_, url := startServer(t, Config{EmbeddingDim: 64})
	_, _, body := post(t, url+"/v1/embeddings", `{"model":"qwen3-8b","input":["hello world","hello world","other text here"]}`)
	o := decode(t, body)
	if !strings.HasPrefix(o["id"].(string), "embd-") || o["object"] != "list" {
		t.Errorf("header = %v", o)
	}
	data := o["data"].([]any)
	if len(data) != 3 {
		t.Fatalf("data = %v", data)
	}
	vec := func(i int) []float64 {
		d := data[i].(obj)
		if d["object"] != "embedding" || num(t, d["index"]) != int64(i) {
			t.Errorf("item = %v", d)
		}
		var out []float64
		for _, x := range d["embedding"].([]any) {
			f, _ := x.(json.Number).Float64()
			out = append(out, f)
		}
		return out
	}
	v0, v1, v2 := vec(0), vec(1), vec(2)
	if len(v0) != 64 {
		t.Fatalf("dim = %d", len(v0))
	}
	var norm float64
	for i := range v0 {
		norm += v0[i] * v0[i]
		if v0[i] != v1[i] {
			t.Fatalf("same input, different vectors")
		}
	}
	if math.Abs(norm-1) > 1e-4 {
		t.Errorf("norm = %v", norm)
	}
	if v0[0] == v2[0] && v0[1] == v2[1] {
		t.Errorf("different inputs, same vector")
	}
	if num(t, at(t, o, "usage", "prompt_tokens")) != 7 {
		t.Errorf("usage = %v", o["usage"])
	}
	// base64: little-endian float32s of the same vector
	_, _, body = post(t, url+"/v1/embeddings", `{"model":"qwen3-8b","input":"hello world","encoding_format":"base64"}`)
	raw, err := base64.StdEncoding.DecodeString(at(t, decode(t, body), "data", 0, "embedding").(string))
	if err != nil || len(raw) != 64*4 {
		t.Fatalf("base64 embedding: %v, %d bytes", err, len(raw))
	}
	for i := range v0 {
		f := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		if math.Abs(float64(f)-v0[i]) > 1e-6 {
			t.Fatalf("base64[%d] = %v, float = %v", i, f, v0[i])
		}
	}
	// dimensions
	_, _, body = post(t, url+"/v1/embeddings", `{"model":"qwen3-8b","input":"hi","dimensions":16}`)
	if n := len(at(t, decode(t, body), "data", 0, "embedding").([]any)); n != 16 {
		t.Errorf("dimensions: len %d", n)
	}
}

func TestVLLMTokenize(t *testing.T) {
	_, url := startServer(t, Config{MaxModelLen: 4096})
	_, _, body := post(t, url+"/tokenize", `{"model":"qwen3-8b","prompt":"the model is fast"}`)
	o := decode(t, body)
	hasKeys(t, o, "count", "max_model_len", "tokens")
	if num(t, o["count"]) != 4 || num(t, o["max_model_len"]) != 4096 || len(o["tokens"].([]any)) != 4 {
		t.Errorf("tokenize = %v", o)
	}
	// chat messages: the same count as a chat request's prompt_tokens
	msgs := `[{"role":"system","content":"be nice"},{"role":"user","content":"hello there friend"}]`
	_, _, body = post(t, url+"/tokenize", `{"model":"qwen3-8b","messages":`+msgs+`}`)
	count := num(t, decode(t, body)["count"])
	_, _, body = post(t, url+"/v1/chat/completions", `{"model":"qwen3-8b","messages":`+msgs+`}`)
	if pt := num(t, at(t, decode(t, body), "usage", "prompt_tokens")); pt != count || count != 13 {
		t.Errorf("tokenize count %d, chat prompt_tokens %d", count, pt)
	}
	// detokenize round trip of vocabulary words
	_, _, body = post(t, url+"/tokenize", `{"model":"qwen3-8b","prompt":"the model is fast"}`)
	toks, _ := json.Marshal(decode(t, body)["tokens"])
	_, _, body = post(t, url+"/detokenize", `{"model":"qwen3-8b","tokens":`+string(toks)+`}`)
	if p := decode(t, body)["prompt"]; p != "the model is fast" {
		t.Errorf("detokenize = %v", p)
	}
}

// TestVLLMTokenize_ToolCallTurns: /tokenize counts a chat's prompt as the
// chat path's usage does, tool-call turns included (the gateway's exact
// count near the context limit has a margin of a few tokens only; it used
// to count one token less per assistant tool-call message than usage).
// The bodies are the vLLM adapter's: tools, assistant messages with
// content null and tool_calls, tool results.
func TestVLLMTokenize_ToolCallTurns(t *testing.T) {
	_, url := startServer(t, Config{MaxModelLen: 4096})
	raw, err := os.ReadFile(filepath.Join("testdata", "tokenize_tool_turns.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Turns int             `json:"tool_call_turns"`
		Note  string          `json:"note"`
		Body  json.RawMessage `json:"body"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	last := int64(0)
	for _, tc := range cases {
		_, _, body := post(t, url+"/tokenize", string(tc.Body))
		count := num(t, decode(t, body)["count"])
		_, _, body = post(t, url+"/v1/chat/completions", string(tc.Body))
		if pt := num(t, at(t, decode(t, body), "usage", "prompt_tokens")); pt != count {
			t.Errorf("%d tool-call turns %s: /tokenize count %d, chat prompt_tokens %d", tc.Turns, tc.Note, count, pt)
		}
		if tc.Note == "" && count <= last {
			t.Errorf("%d tool-call turns: count %d, not more than %d", tc.Turns, count, last)
		}
		last = count
	}
}

// NoTokenize: a vLLM whose /tokenize is not routed answers 404 there and
// still serves chat.
func TestVLLMNoTokenize(t *testing.T) {
	_, url := startServer(t, Config{NoTokenize: true})
	for _, path := range []string{"/tokenize", "/detokenize"} {
		if code, _, body := post(t, url+path, `{"model":"qwen3-8b","prompt":"hi"}`); code != 404 {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	if code, _, body := post(t, url+"/v1/chat/completions", `{"model":"qwen3-8b","messages":[{"role":"user","content":"hi"}]}`); code != 200 {
		t.Errorf("chat: %d %s", code, body)
	}
}

func TestVLLMRerankScore(t *testing.T) {
	_, url := startServer(t, Config{})
	for _, path := range []string{"/v1/rerank", "/rerank"} {
		_, _, body := post(t, url+path, `{"model":"qwen3-8b","query":"fast router latency","top_n":2,
			"documents":["bananas are yellow","a fast router keeps latency low","cats sleep"]}`)
		o := decode(t, body)
		hasKeys(t, o, "id", "model", "usage", "results")
		res := o["results"].([]any)
		if len(res) != 2 {
			t.Fatalf("%s: results = %v", path, res)
		}
		top := res[0].(obj)
		if num(t, top["index"]) != 1 || at(t, top, "document", "text") != "a fast router keeps latency low" {
			t.Errorf("%s: top = %v", path, top)
		}
		s0, _ := top["relevance_score"].(json.Number).Float64()
		s1, _ := at(t, res[1], "relevance_score").(json.Number).Float64()
		if s0 < s1 || s0 <= 0 || s0 >= 1 {
			t.Errorf("%s: scores %v %v", path, s0, s1)
		}
		if num(t, at(t, o, "usage", "total_tokens")) == 0 {
			t.Errorf("%s: usage %v", path, o["usage"])
		}
	}
	for _, path := range []string{"/v1/score", "/score"} {
		_, _, body := post(t, url+path, `{"model":"qwen3-8b","text_1":"fast router","text_2":["a fast router","slow boat"]}`)
		o := decode(t, body)
		if o["object"] != "list" || !strings.HasPrefix(o["id"].(string), "score-") {
			t.Errorf("%s: %v", path, o)
		}
		data := o["data"].([]any)
		if len(data) != 2 || at(t, data[0], "object") != "score" || num(t, at(t, data[1], "index")) != 1 {
			t.Errorf("%s: data = %v", path, data)
		}
		a, _ := at(t, data[0], "score").(json.Number).Float64()
		b, _ := at(t, data[1], "score").(json.Number).Float64()
		if a <= b {
			t.Errorf("%s: scores %v <= %v", path, a, b)
		}
	}
}

func TestVLLMErrors(t *testing.T) {
	_, url := startServer(t, Config{})
	checkErr := func(code int, body []byte, wantCode int, wantType string) {
		t.Helper()
		if code != wantCode {
			t.Errorf("status %d, want %d: %s", code, wantCode, body)
			return
		}
		e := at(t, decode(t, body), "error").(obj)
		hasKeys(t, e, "message", "type", "param", "code")
		if e["type"] != wantType || num(t, e["code"]) != int64(wantCode) {
			t.Errorf("error = %v", e)
		}
	}
	code, _, body := post(t, url+"/v1/chat/completions", `{"model":"gpt-5","messages":[{"role":"user","content":"x"}]}`)
	checkErr(code, body, 404, "NotFoundError")
	if m := at(t, decode(t, body), "error", "message"); m != "The model `gpt-5` does not exist." {
		t.Errorf("message = %v", m)
	}
	code, _, body = post(t, url+"/v1/chat/completions", `{"model":`)
	checkErr(code, body, 400, "BadRequestError")
	code, _, body = post(t, url+"/v1/chat/completions", `{"model":"qwen3-8b"}`)
	checkErr(code, body, 400, "BadRequestError")
	code, _, body = post(t, url+"/v1/chat/completions", `{"model":"qwen3-8b","n":129,"messages":[]}`)
	checkErr(code, body, 400, "BadRequestError")
	code, _, body = post(t, url+"/v1/chat/completions", `{"model":"qwen3-8b","top_logprobs":2,"messages":[]}`)
	checkErr(code, body, 400, "BadRequestError")
	code, _, body = post(t, url+"/v1/embeddings", `{"model":"nope","input":"x"}`)
	checkErr(code, body, 404, "NotFoundError")
	// routing errors are FastAPI's
	code, _, body = get(t, url+"/v1/chat/completions")
	if code != 405 || decode(t, body)["detail"] != "Method Not Allowed" {
		t.Errorf("GET chat: %d %s", code, body)
	}
	code, _, body = get(t, url+"/nope")
	if code != 404 || decode(t, body)["detail"] != "Not Found" {
		t.Errorf("unknown path: %d %s", code, body)
	}
	// a missing model means the first served model
	code, _, body = post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`)
	if code != 200 || decode(t, body)["model"] != "qwen3-8b" {
		t.Errorf("no model: %d %s", code, body)
	}
}

func TestVLLMRequestIDHeader(t *testing.T) {
	_, url := startServer(t, Config{})
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(`{"model":"qwen3-8b","messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("X-Request-Id", "abc-123")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var o map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&o)
	if o["id"] != "chatcmpl-abc-123" {
		t.Errorf("id = %v", o["id"])
	}
}

func TestVLLMMetrics(t *testing.T) {
	_, url := startServer(t, Config{Tokens: 4})
	for i := 0; i < 3; i++ {
		post(t, url+"/v1/chat/completions", `{"model":"llama3.1-8b","messages":[{"role":"user","content":"one two three"}]}`)
	}
	post(t, url+"/v1/chat/completions", `{"model":"llama3.1-8b","max_tokens":2,"messages":[{"role":"user","content":"x"}]}`)
	code, hdr, body := get(t, url+"/metrics")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %s", code, hdr.Get("Content-Type"))
	}
	m := string(body)
	for _, want := range []string{
		"# TYPE vllm:num_requests_running gauge",
		`vllm:num_requests_running{model_name="llama3.1-8b",engine="0"} 0.0`,
		`vllm:num_requests_waiting{model_name="qwen3-8b",engine="0"} 0.0`,
		`vllm:gpu_cache_usage_perc{model_name="llama3.1-8b",engine="0"} 0.0`,
		`vllm:kv_cache_usage_perc{model_name="llama3.1-8b",engine="0"} 0.0`,
		"# TYPE vllm:prompt_tokens_total counter",
		`vllm:prompt_tokens_total{model_name="llama3.1-8b",engine="0"} 26.0`,
		`vllm:generation_tokens_total{model_name="llama3.1-8b",engine="0"} 14.0`,
		`vllm:request_success_total{model_name="llama3.1-8b",engine="0",finished_reason="stop"} 3.0`,
		`vllm:request_success_total{model_name="llama3.1-8b",engine="0",finished_reason="length"} 1.0`,
		"# TYPE vllm:time_to_first_token_seconds histogram",
		`vllm:time_to_first_token_seconds_bucket{model_name="llama3.1-8b",engine="0",le="+Inf"} 4.0`,
		`vllm:time_to_first_token_seconds_count{model_name="llama3.1-8b",engine="0"} 4.0`,
		`vllm:e2e_request_latency_seconds_bucket{model_name="llama3.1-8b",engine="0",le="0.3"} 4.0`,
		`vllm:e2e_request_latency_seconds_count{model_name="llama3.1-8b",engine="0"} 4.0`,
		`vllm:e2e_request_latency_seconds_sum{model_name="llama3.1-8b",engine="0"}`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestVLLMStreamOptionsAndReasoningVisibility(t *testing.T) {
	_, url := startServer(t, Config{Tokens: 3, ReasoningTokens: 2})
	// continuous_usage_stats: every chunk carries the usage so far
	_, _, body := post(t, url+"/v1/chat/completions", `{"model":"qwen3-8b","stream":true,
		"stream_options":{"include_usage":true,"continuous_usage_stats":true},"messages":[{"role":"user","content":"x"}]}`)
	chunks := sseChunks(t, body)
	prev := int64(-1)
	for _, c := range chunks {
		n := num(t, at(t, c, "usage", "completion_tokens"))
		if n < prev {
			t.Errorf("usage went down: %d after %d", n, prev)
		}
		prev = n
	}
	if prev != 3 {
		t.Errorf("final usage %d", prev)
	}
	// stream_options {} means include_usage, as in vLLM
	_, _, body = post(t, url+"/v1/chat/completions", `{"model":"qwen3-8b","stream":true,"stream_options":{},"messages":[{"role":"user","content":"x"}]}`)
	chunks = sseChunks(t, body)
	if _, ok := chunks[len(chunks)-1]["usage"]; !ok {
		t.Errorf("no usage chunk with stream_options {}")
	}
	// include_reasoning false hides the reasoning but still counts its tokens
	req := `{"model":"qwen3-8b","include_reasoning":false,"chat_template_kwargs":{"enable_thinking":true},"messages":[{"role":"user","content":"x"}]`
	_, _, body = post(t, url+"/v1/chat/completions", req+`}`)
	o := decode(t, body)
	if at(t, o, "choices", 0, "message", "reasoning_content") != nil || num(t, at(t, o, "usage", "completion_tokens")) != 5 {
		t.Errorf("hidden reasoning: %s", body)
	}
	_, _, body = post(t, url+"/v1/chat/completions", req+`,"stream":true}`)
	if strings.Contains(string(body), "reasoning") {
		t.Errorf("hidden reasoning streamed: %s", body)
	}
}

func TestVLLMCompletionsEcho(t *testing.T) {
	_, url := startServer(t, Config{Tokens: 3})
	_, _, body := post(t, url+"/v1/completions", `{"model":"qwen3-8b","prompt":"Say:","echo":true,"max_tokens":10}`)
	text := at(t, decode(t, body), "choices", 0, "text").(string)
	if !strings.HasPrefix(text, "Say:") || countWords(text) != 4 {
		t.Errorf("echo text %q", text)
	}
}
