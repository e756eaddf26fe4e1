package fakellm

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// serveDirect runs one request through the server's handler, without the
// panic guard of handle, and returns the status and the whole body (streams
// included).
func serveDirect(t *testing.T, s *Server, path string, body []byte) (int, []byte) {
	var ctx fasthttp.RequestCtx
	ctx.Init(&fasthttp.Request{}, nil, nil)
	ctx.Request.Header.SetMethod(fasthttp.MethodPost)
	ctx.Request.SetRequestURI(path)
	ctx.Request.SetBody(body)
	if s.cfg.Engine == EngineOllama {
		s.handleOllama(&ctx)
	} else {
		s.handleVLLM(&ctx)
	}
	return ctx.Response.StatusCode(), append([]byte(nil), ctx.Response.Body()...)
}

// checkResponse checks that a response is well-formed JSON, SSE or NDJSON.
func checkResponse(t *testing.T, status int, body []byte) {
	t.Helper()
	switch {
	case bytes.HasPrefix(body, []byte("data: ")):
		for _, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
			ev = strings.TrimPrefix(ev, "data: ")
			if ev != "[DONE]" && !json.Valid([]byte(ev)) {
				t.Fatalf("status %d: invalid SSE chunk %q", status, ev)
			}
		}
	case bytes.Count(body, []byte("\n")) > 0:
		for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
			if !json.Valid([]byte(line)) {
				t.Fatalf("status %d: invalid NDJSON line %q", status, line)
			}
		}
	case len(body) > 0 && !json.Valid(body):
		t.Fatalf("status %d: invalid JSON %q", status, body)
	}
	if status != 200 && status != 400 && status != 404 {
		t.Fatalf("unexpected status %d: %s", status, body)
	}
}

var fuzzSeeds = []string{
	`{"model":"qwen3-8b","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"qwen3-8b","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
	`{"model":"qwen3-8b","messages":[{"role":"user","content":"x"}],"tools":[` + weatherTool + `],"tool_choice":"required"}`,
	`{"model":"qwen3-8b","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"a":{"$ref":"#/x"}},"required":["a"]}}}}`,
	`{"model":"qwen3-8b","think":"high","format":{"type":"array","items":{}},"options":{"num_predict":2},"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"qwen3-8b","prompt":["a",[1,2]],"input":[[3]],"max_tokens":null,"tool_choice":{"function":{}}}`,
	`{"model":null,"messages":{},"tools":[{}],"stream_options":[]}`,
	`[]`, `"x"`, `{`, ``,
}

func fuzzServer(t testing.TB, engine string) *Server {
	s, err := New(Config{Engine: engine, Tokens: 4, EmbeddingDim: 8, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func FuzzVLLM(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	s := fuzzServer(f, EngineVLLM)
	paths := []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/tokenize", "/detokenize", "/v1/rerank", "/v1/score"}
	f.Fuzz(func(t *testing.T, body string) {
		for _, p := range paths {
			status, out := serveDirect(t, s, p, []byte(body))
			checkResponse(t, status, out)
		}
	})
}

func FuzzOllama(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	s := fuzzServer(f, EngineOllama)
	paths := []string{"/api/chat", "/api/generate", "/api/embed", "/api/embeddings", "/api/show"}
	f.Fuzz(func(t *testing.T, body string) {
		for _, p := range paths {
			status, out := serveDirect(t, s, p, []byte(body))
			checkResponse(t, status, out)
		}
	})
}

func FuzzJSONString(f *testing.F) {
	f.Add("plain")
	f.Add("\x00\xff\u2028\"\\")
	f.Fuzz(func(t *testing.T, s string) {
		if out := appendJSONString(nil, s); !json.Valid(out) {
			t.Fatalf("%q -> invalid %q", s, out)
		}
	})
}
