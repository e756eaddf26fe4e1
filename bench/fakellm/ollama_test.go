package fakellm

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func ollamaServer(t *testing.T, cfg Config) (*Server, string) {
	cfg.Engine = EngineOllama
	return startServer(t, cfg)
}

// checkCreatedAt checks an RFC 3339 timestamp as Go's time.Time marshals it.
func checkCreatedAt(t *testing.T, o obj) {
	t.Helper()
	s, ok := o["created_at"].(string)
	if !ok {
		t.Fatalf("created_at missing: %v", o)
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		t.Errorf("created_at %q: %v", s, err)
	}
}

func checkDoneMetrics(t *testing.T, o obj, prompt, eval int64) {
	t.Helper()
	hasKeys(t, o, "total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration")
	if num(t, o["prompt_eval_count"]) != prompt || num(t, o["eval_count"]) != eval {
		t.Errorf("counts = %v/%v, want %d/%d", o["prompt_eval_count"], o["eval_count"], prompt, eval)
	}
	for _, k := range []string{"total_duration", "load_duration", "prompt_eval_duration", "eval_duration"} {
		if num(t, o[k]) <= 0 {
			t.Errorf("%s = %v", k, o[k])
		}
	}
}

func TestOllamaChatStream(t *testing.T) {
	_, url := ollamaServer(t, Config{Tokens: 5})
	code, hdr, body := post(t, url+"/api/chat", `{"model":"llama3.1-8b","messages":[{"role":"user","content":"Hello there friend"}]}`)
	if code != 200 || hdr.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("status %d %q", code, hdr.Get("Content-Type"))
	}
	if hdr.Get("Server") != "" {
		t.Errorf("Server header %q (Ollama sends none)", hdr.Get("Server"))
	}
	lines := ndjson(t, body)
	if len(lines) != 6 {
		t.Fatalf("want 5 tokens + done, got %d: %s", len(lines), body)
	}
	var text strings.Builder
	for _, l := range lines[:5] {
		checkCreatedAt(t, l)
		if l["model"] != "llama3.1-8b" || l["done"] != false {
			t.Errorf("chunk = %v", l)
		}
		msg := l["message"].(obj)
		if msg["role"] != "assistant" {
			t.Errorf("message = %v", msg)
		}
		if _, ok := msg["thinking"]; ok {
			t.Errorf("unexpected thinking: %v", msg)
		}
		text.WriteString(msg["content"].(string))
		if _, ok := l["done_reason"]; ok {
			t.Errorf("done_reason in a partial chunk: %v", l)
		}
	}
	if countWords(text.String()) != 5 {
		t.Errorf("text = %q", text.String())
	}
	done := lines[5]
	if done["done"] != true || done["done_reason"] != "stop" || at(t, done, "message", "content") != "" {
		t.Errorf("done = %v", done)
	}
	checkDoneMetrics(t, done, 7, 5)

	// stream:false is one object with the same text
	code, hdr, body = post(t, url+"/api/chat", `{"model":"llama3.1-8b","stream":false,"messages":[{"role":"user","content":"Hello there friend"}]}`)
	if code != 200 || hdr.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("status %d %q", code, hdr.Get("Content-Type"))
	}
	o := decode(t, body)
	if at(t, o, "message", "content") != text.String() || o["done"] != true || o["done_reason"] != "stop" {
		t.Errorf("non-stream = %v", o)
	}
	checkDoneMetrics(t, o, 7, 5)
}

func TestOllamaNumPredictAndNumCtx(t *testing.T) {
	s, url := ollamaServer(t, Config{Tokens: 10})
	req := `{"model":"llama3.1-8b","stream":false,"options":{"num_predict":3,"num_ctx":8192},"messages":[{"role":"user","content":"x"}]}`
	_, _, body := post(t, url+"/api/chat", req)
	o := decode(t, body)
	if o["done_reason"] != "length" || num(t, o["eval_count"]) != 3 || countWords(at(t, o, "message", "content").(string)) != 3 {
		t.Errorf("num_predict: %v", o)
	}
	// a gateway test can check what reached the backend
	var seen map[string]any
	_ = json.Unmarshal(s.LastBody("/api/chat"), &seen)
	if seen["options"].(map[string]any)["num_ctx"] != 8192.0 {
		t.Errorf("LastBody = %v", seen)
	}
	// /api/ps shows the model loaded with that context
	_, _, body = get(t, url+"/api/ps")
	models := decode(t, body)["models"].([]any)
	if len(models) != 1 {
		t.Fatalf("ps = %s", body)
	}
	m := models[0].(obj)
	hasKeys(t, m, "name", "model", "size", "digest", "details", "expires_at", "size_vram", "context_length")
	if m["name"] != "llama3.1-8b:latest" || num(t, m["context_length"]) != 8192 {
		t.Errorf("ps model = %v", m)
	}
	exp, err := time.Parse(time.RFC3339Nano, m["expires_at"].(string))
	if err != nil || time.Until(exp) < 4*time.Minute {
		t.Errorf("expires_at = %v (%v)", m["expires_at"], err)
	}
}

func TestOllamaGenerate(t *testing.T) {
	_, url := ollamaServer(t, Config{Tokens: 4})
	_, _, body := post(t, url+"/api/generate", `{"model":"llama3.1-8b:latest","prompt":"Why is the sky blue?"}`)
	lines := ndjson(t, body)
	if len(lines) != 5 {
		t.Fatalf("want 4 tokens + done: %s", body)
	}
	var text strings.Builder
	for _, l := range lines[:4] {
		checkCreatedAt(t, l)
		if l["model"] != "llama3.1-8b:latest" {
			t.Errorf("model not echoed: %v", l["model"])
		}
		text.WriteString(l["response"].(string))
	}
	done := lines[4]
	if done["response"] != "" || done["done"] != true || done["done_reason"] != "stop" {
		t.Errorf("done = %v", done)
	}
	if ctx, ok := done["context"].([]any); !ok || len(ctx) == 0 {
		t.Errorf("context = %v", done["context"])
	}
	checkDoneMetrics(t, done, 9, 4)
	_, _, body = post(t, url+"/api/generate", `{"model":"llama3.1-8b","prompt":"Why is the sky blue?","stream":false}`)
	if o := decode(t, body); o["response"] != text.String() {
		t.Errorf("non-stream response %v != %q", o["response"], text.String())
	}
	// empty prompt: Ollama just loads the model
	_, _, body = post(t, url+"/api/generate", `{"model":"llama3.1-8b"}`)
	if o := decode(t, body); o["done_reason"] != "load" || o["done"] != true {
		t.Errorf("load = %v", o)
	}
}

func TestOllamaThinking(t *testing.T) {
	_, url := ollamaServer(t, Config{Tokens: 3, ReasoningTokens: 2})
	for _, think := range []string{`true`, `"high"`} {
		_, _, body := post(t, url+"/api/chat", `{"model":"qwen3-8b","think":`+think+`,"messages":[{"role":"user","content":"x"}]}`)
		lines := ndjson(t, body)
		var order []string
		for _, l := range lines[:len(lines)-1] {
			msg := l["message"].(obj)
			if th, ok := msg["thinking"].(string); ok && th != "" {
				if msg["content"] != "" {
					t.Errorf("thinking chunk with content: %v", msg)
				}
				order = append(order, "t")
			} else {
				order = append(order, "c")
			}
		}
		if strings.Join(order, "") != "ttccc" {
			t.Errorf("think=%s: chunk order %v", think, order)
		}
		checkDoneMetrics(t, lines[len(lines)-1], 5, 5)
	}
	_, _, body := post(t, url+"/api/generate", `{"model":"qwen3-8b","think":true,"prompt":"x","stream":false}`)
	if o := decode(t, body); countWords(o["thinking"].(string)) != 2 || countWords(o["response"].(string)) != 3 {
		t.Errorf("generate thinking = %v", o)
	}
	// a model without the thinking capability refuses, as Ollama does
	code, _, body := post(t, url+"/api/chat", `{"model":"llama3.1-8b","think":true,"messages":[{"role":"user","content":"x"}]}`)
	if code != 400 || decode(t, body)["error"] != `"llama3.1-8b" does not support thinking` {
		t.Errorf("think on llama: %d %s", code, body)
	}
}

func TestOllamaTools(t *testing.T) {
	_, url := ollamaServer(t, Config{})
	_, _, body := post(t, url+"/api/chat", `{"model":"qwen3-8b","messages":[{"role":"user","content":"weather?"}],"tools":[`+weatherTool+`]}`)
	lines := ndjson(t, body)
	if len(lines) != 2 {
		t.Fatalf("want one tool-call chunk + done: %s", body)
	}
	tcs := at(t, lines[0], "message", "tool_calls").([]any)
	if len(tcs) != 1 {
		t.Fatalf("tool_calls = %v", tcs)
	}
	tc := tcs[0].(obj)
	if !strings.HasPrefix(tc["id"].(string), "call_") {
		t.Errorf("id = %v", tc["id"])
	}
	fn := tc["function"].(obj)
	args, ok := fn["arguments"].(map[string]any)
	if fn["name"] != "get_weather" || !ok || num(t, fn["index"]) != 0 {
		t.Fatalf("function = %v (arguments must be an object)", fn)
	}
	if args["unit"] != "celsius" || args["city"] == nil || args["days"] == nil {
		t.Errorf("arguments = %v", args)
	}
	if done := lines[1]; done["done_reason"] != "stop" {
		t.Errorf("done = %v", done)
	}
	_, _, body = post(t, url+"/api/chat", `{"model":"qwen3-8b","stream":false,"messages":[{"role":"user","content":"weather?"}],"tools":[`+weatherTool+`]}`)
	o := decode(t, body)
	if at(t, o, "message", "tool_calls", 0, "function", "name") != "get_weather" || at(t, o, "message", "content") != "" {
		t.Errorf("non-stream tool call = %v", o)
	}
}

func TestOllamaFormat(t *testing.T) {
	_, url := ollamaServer(t, Config{})
	schema := `{"type":"object","properties":{"city":{"type":"string"},"temp":{"type":"number"},"ok":{"type":"boolean"}},"required":["city","temp","ok"]}`
	for _, format := range []string{`"json"`, schema} {
		_, _, body := post(t, url+"/api/chat", `{"model":"llama3.1-8b","format":`+format+`,"messages":[{"role":"user","content":"json please"}]}`)
		lines := ndjson(t, body)
		var sb strings.Builder
		for _, l := range lines[:len(lines)-1] {
			sb.WriteString(at(t, l, "message", "content").(string))
		}
		if len(lines) < 4 {
			t.Errorf("JSON not streamed in pieces: %d lines", len(lines))
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(sb.String()), &v); err != nil {
			t.Fatalf("format %s: not JSON: %q", format, sb.String())
		}
		if format == `"json"` {
			if _, ok := v["answer"]; !ok {
				t.Errorf("json: %v", v)
			}
		} else if _, ok := v["temp"].(float64); !ok || v["city"] == nil || v["ok"] == nil {
			t.Errorf("schema: %v", v)
		}
	}
}

func TestOllamaModelsEndpoints(t *testing.T) {
	_, url := ollamaServer(t, Config{Models: []string{"qwen3-8b", "llama3.1:70b", "nomic-embed-text"}, MaxModelLen: 40960})
	code, hdr, body := get(t, url+"/")
	if code != 200 || string(body) != "Ollama is running" || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Errorf("/ = %d %q", code, body)
	}
	_, _, body = get(t, url+"/api/version")
	if decode(t, body)["version"] != DefaultOllamaVersion {
		t.Errorf("version = %s", body)
	}
	_, _, body = get(t, url+"/api/tags")
	models := decode(t, body)["models"].([]any)
	if len(models) != 3 {
		t.Fatalf("tags = %s", body)
	}
	m := models[1].(obj)
	hasKeys(t, m, "name", "model", "modified_at", "size", "digest", "details")
	if m["name"] != "llama3.1:70b" || len(m["digest"].(string)) != 64 || num(t, m["size"]) < 30e9 {
		t.Errorf("tag = %v", m)
	}
	d := m["details"].(obj)
	hasKeys(t, d, "parent_model", "format", "family", "families", "parameter_size", "quantization_level")
	if d["format"] != "gguf" || d["family"] != "llama" || d["parameter_size"] != "70.0B" {
		t.Errorf("details = %v", d)
	}
	if at(t, models[0], "name") != "qwen3-8b:latest" {
		t.Errorf("untagged model listed as %v", at(t, models[0], "name"))
	}
	// nothing used yet: nothing loaded
	_, _, body = get(t, url+"/api/ps")
	if len(decode(t, body)["models"].([]any)) != 0 {
		t.Errorf("ps = %s", body)
	}

	_, _, body = post(t, url+"/api/show", `{"model":"qwen3-8b"}`)
	o := decode(t, body)
	hasKeys(t, o, "modelfile", "parameters", "template", "details", "model_info", "capabilities", "modified_at")
	mi := o["model_info"].(obj)
	if mi["general.architecture"] != "qwen3" || num(t, mi["qwen3.context_length"]) != 40960 {
		t.Errorf("model_info = %v", mi)
	}
	caps, _ := json.Marshal(o["capabilities"])
	if string(caps) != `["completion","vision","tools","thinking"]` {
		t.Errorf("capabilities = %s", caps)
	}
	_, _, body = post(t, url+"/api/show", `{"name":"llama3.1:70b"}`)
	caps, _ = json.Marshal(decode(t, body)["capabilities"])
	if string(caps) != `["completion","vision","tools"]` {
		t.Errorf("llama capabilities = %s", caps)
	}
	_, _, body = post(t, url+"/api/show", `{"model":"nomic-embed-text"}`)
	caps, _ = json.Marshal(decode(t, body)["capabilities"])
	if string(caps) != `["embedding"]` {
		t.Errorf("embed capabilities = %s", caps)
	}
}

func TestOllamaEmbed(t *testing.T) {
	_, url := ollamaServer(t, Config{EmbeddingDim: 32})
	_, _, body := post(t, url+"/api/embed", `{"model":"qwen3-8b","input":["a b c","d"]}`)
	o := decode(t, body)
	hasKeys(t, o, "model", "embeddings", "total_duration", "load_duration", "prompt_eval_count")
	embs := o["embeddings"].([]any)
	if len(embs) != 2 || len(embs[0].([]any)) != 32 || num(t, o["prompt_eval_count"]) != 4 {
		t.Errorf("embed = %s", body)
	}
	_, _, body = post(t, url+"/api/embed", `{"model":"qwen3-8b","input":"a b c"}`)
	single := at(t, decode(t, body), "embeddings", 0).([]any)
	if single[0] != embs[0].([]any)[0] {
		t.Errorf("embedding not deterministic")
	}
	_, _, body = post(t, url+"/api/embeddings", `{"model":"qwen3-8b","prompt":"a b c"}`)
	legacy := decode(t, body)["embedding"].([]any)
	if len(legacy) != 32 {
		t.Errorf("legacy embedding = %s", body)
	}
	f32, _ := single[0].(json.Number).Float64()
	f64, _ := legacy[0].(json.Number).Float64()
	if float32(f32) != float32(f64) {
		t.Errorf("legacy %v and new %v embeddings differ", f64, f32)
	}
}

func TestOllamaErrors(t *testing.T) {
	_, url := ollamaServer(t, Config{})
	code, hdr, body := post(t, url+"/api/chat", `{"model":"mistral","messages":[{"role":"user","content":"x"}]}`)
	if code != 404 || decode(t, body)["error"] != "model 'mistral' not found" || hdr.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("unknown model: %d %s", code, body)
	}
	code, _, body = post(t, url+"/api/chat", `{"model":`)
	if code != 400 || decode(t, body)["error"] == nil {
		t.Errorf("bad JSON: %d %s", code, body)
	}
	code, _, body = post(t, url+"/api/chat", ``)
	if code != 400 || decode(t, body)["error"] != "missing request body" {
		t.Errorf("no body: %d %s", code, body)
	}
	code, _, body = post(t, url+"/api/generate", `{"prompt":"x"}`)
	if code != 400 || decode(t, body)["error"] != "model is required" {
		t.Errorf("no model: %d %s", code, body)
	}
	code, _, body = get(t, url+"/api/chat")
	if code != 404 || string(body) != "404 page not found" {
		t.Errorf("GET /api/chat: %d %s", code, body)
	}
	code, _, _ = get(t, url+"/metrics")
	if code != 404 {
		t.Errorf("/metrics on Ollama: %d", code)
	}
	code, _, body = post(t, url+"/api/show", `{"model":"nope"}`)
	if code != 404 || decode(t, body)["error"] != "model 'nope' not found" {
		t.Errorf("show unknown: %d %s", code, body)
	}
}

// TestOllamaLatestTag: as Ollama does, a name without a tag means its
// ":latest"; another tag, or the vLLM engine, does not.
func TestOllamaLatestTag(t *testing.T) {
	_, url := ollamaServer(t, Config{Models: []string{"microsoft/phi-4:latest", "qwen3:8b"}})
	for model, want := range map[string]int{
		"microsoft/phi-4": 200, "microsoft/phi-4:latest": 200, "qwen3:8b": 200,
		"qwen3": 404, "microsoft/phi-4:14b": 404,
	} {
		code, _, body := post(t, url+"/api/chat", `{"model":"`+model+`","stream":false,"messages":[{"role":"user","content":"x"}]}`)
		if code != want {
			t.Errorf("%s: %d %s, want %d", model, code, body, want)
		}
	}
}

// With VisionByName, /api/show lists "vision" for models named as
// Ollama's vision models are (llava without tools, as Ollama's llava has
// none); without, for every chat model.
func TestOllamaShowVision(t *testing.T) {
	_, url := ollamaServer(t, Config{Models: []string{"llama3.2:3b", "llava:7b", "nomic-embed-text"}})
	for model, want := range map[string]string{
		"llama3.2:3b":      `["completion","vision","tools"]`,
		"llava:7b":         `["completion","vision","tools"]`,
		"nomic-embed-text": `["embedding"]`,
	} {
		_, _, body := post(t, url+"/api/show", `{"model":"`+model+`"}`)
		if caps, _ := json.Marshal(decode(t, body)["capabilities"]); string(caps) != want {
			t.Errorf("%s: capabilities %s, want %s", model, caps, want)
		}
	}
	_, url = ollamaServer(t, Config{VisionByName: true, Models: []string{"llama3.2:3b", "llava:7b", "llama3.2-vision:11b", "qwen2.5-vl:7b"}})
	for model, want := range map[string]string{
		"llama3.2:3b":         `["completion","tools"]`,
		"llava:7b":            `["completion","vision"]`,
		"llama3.2-vision:11b": `["completion","vision","tools"]`,
		"qwen2.5-vl:7b":       `["completion","vision","tools"]`,
	} {
		_, _, body := post(t, url+"/api/show", `{"model":"`+model+`"}`)
		if caps, _ := json.Marshal(decode(t, body)["capabilities"]); string(caps) != want {
			t.Errorf("%s: capabilities %s, want %s", model, caps, want)
		}
	}
}

// TestOllamaNumCtxWindow: a request runs at the model's loaded num_ctx
// (4096 until a request asks for another, at most the trained context of
// /api/show): a longer prompt is cut to it (prompt_eval_count), or refused
// with truncate false; a request with a larger num_ctx is served whole.
func TestOllamaNumCtxWindow(t *testing.T) {
	_, url := ollamaServer(t, Config{Tokens: 2, MaxModelLen: 16384})
	long := strings.Repeat("word ", 6000)
	chat := func(extra string) (int, obj) {
		t.Helper()
		status, _, body := post(t, url+"/api/chat", `{"model":"llama3.1-8b","stream":false,`+extra+`"messages":[{"role":"user","content":"`+long+`"}]}`)
		return status, decode(t, body)
	}
	if status, o := chat(""); status != 200 || num(t, o["prompt_eval_count"]) != 4096 {
		t.Errorf("default num_ctx: %d %v, want the prompt cut to 4096", status, o["prompt_eval_count"])
	}
	if status, o := chat(`"truncate":false,`); status != 400 || o["error"] != "the input length exceeds the context length" {
		t.Errorf("truncate false: %d %v", status, o)
	}
	if status, o := chat(`"options":{"num_ctx":8192},`); status != 200 || num(t, o["prompt_eval_count"]) <= 6000 {
		t.Errorf("num_ctx 8192: %d %v, want the whole prompt", status, o["prompt_eval_count"])
	}
	// beyond the trained context Ollama loads the trained context
	chat(`"options":{"num_ctx":100000},`)
	_, _, body := get(t, url+"/api/ps")
	if m := decode(t, body)["models"].([]any)[0].(obj); num(t, m["context_length"]) != 16384 {
		t.Errorf("ps after num_ctx 100000: %v", m)
	}
}
