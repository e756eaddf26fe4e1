package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// codexExecBody is the first request of `codex exec` 0.169.0 (wire_api
// responses, default tools: function tools, the multi_agent_v1
// namespace, a hosted web_search), as captured, for model.
func codexExecBody(t *testing.T, model string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "plugins", "responses", "testdata", "codex-exec-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	v["model"] = model
	b, _ = json.Marshal(v)
	return b
}

// sseEvents reads an SSE body into (event, data) pairs.
func sseEvents(t *testing.T, r io.Reader) [][2]string {
	t.Helper()
	var out [][2]string
	var ev string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			out = append(out, [2]string{ev, line[len("data: "):]})
		}
	}
	return out
}

// TestResponses_CodexExec: Codex's request (namespace and web_search
// tools) is answered 200 on both engines, where it was 400 "tool type
// namespace is not supported" and Codex ended turn.failed. The model is
// offered the namespace's tools flattened and not web_search, the answer
// says so in X-MindRouter-Dropped-Tools, and the streamed Response
// repeats store:false and the request's tools.
func TestResponses_CodexExec(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	for _, tc := range []struct {
		model, path string
		fake        *fakellm.Server
	}{{vllmModel, chatPath, e.vllm}, {ollamaModel, "/api/chat", e.ollama}} {
		t.Run(tc.model, func(t *testing.T) {
			req, _ := http.NewRequest("POST", e.base+"/v1/responses", bytes.NewReader(codexExecBody(t, tc.model)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+adminKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if d := resp.Header.Get("X-MindRouter-Dropped-Tools"); d != "web_search" {
				t.Errorf("X-MindRouter-Dropped-Tools = %q, want web_search", d)
			}
			var created, done map[string]json.RawMessage
			for _, ev := range sseEvents(t, resp.Body) {
				var v struct {
					Response map[string]json.RawMessage `json:"response"`
				}
				_ = json.Unmarshal([]byte(ev[1]), &v)
				switch ev[0] {
				case "response.created":
					created = v.Response
				case "response.completed":
					done = v.Response
				}
			}
			for name, r := range map[string]map[string]json.RawMessage{"response.created": created, "response.completed": done} {
				var tools []any
				_ = json.Unmarshal(r["tools"], &tools)
				if string(r["store"]) != "false" || len(tools) != 9 || string(r["reasoning"]) != `{"effort":null,"summary":"auto"}` {
					t.Errorf("%s: store %s, %d tools, reasoning %s; want the request's", name, r["store"], len(tools), r["reasoning"])
				}
			}
			sent := string(tc.fake.LastBody(tc.path))
			if !strings.Contains(sent, `"multi_agent_v1__close_agent"`) || strings.Contains(sent, "web_search") {
				t.Errorf("backend offered tools: want the namespace flattened, no web_search:\n%.2000s", sent)
			}
		})
	}
}

// TestResponses_EchoesRequest: the Response object (the official SDK's
// reading of it) repeats the request as OpenAI's does; it said store
// true, max_output_tokens and instructions null and tools [].
func TestResponses_EchoesRequest(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			p := respParams(model, "Hello")
			p.Instructions = openai.String("Be brief.")
			p.MaxOutputTokens = openai.Int(64)
			p.Store = openai.Bool(false)
			p.Temperature = openai.Float(0.5)
			p.Reasoning = shared.ReasoningParam{Summary: shared.ReasoningSummaryAuto}
			p.Tools = []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "lookup",
				Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}}}
			resp, err := e.client.Responses.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]json.RawMessage
			_ = json.Unmarshal([]byte(resp.RawJSON()), &raw)
			if string(raw["store"]) != "false" || resp.MaxOutputTokens != 64 || resp.Instructions.OfString != "Be brief." ||
				len(resp.Tools) != 1 || resp.Tools[0].Name != "lookup" || resp.Reasoning.Summary != "auto" || resp.Temperature != 0.5 {
				t.Errorf("echo: store %s max_output_tokens %d instructions %q tools %d reasoning %s temperature %v",
					raw["store"], resp.MaxOutputTokens, resp.Instructions.OfString, len(resp.Tools), raw["reasoning"], resp.Temperature)
			}
		})
	}
}

// TestResponses_TruncationAuto: truncation "auto" drops the oldest turns
// to fit the window (keeping the instructions and the last turn) instead
// of 400 context_length_exceeded; without it the request is still
// refused.
func TestResponses_TruncationAuto(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{MaxModelLen: ctxWindow}, fakellm.Config{}, "")
	long := strings.Repeat("All work and no play makes a dull gateway. ", 40) // ≈ 400 tokens
	var items []string
	for i := range 6 {
		items = append(items, `{"role":"user","content":"turn `+string(rune('a'+i))+` `+long+`"}`,
			`{"role":"assistant","content":"noted"}`)
	}
	items = append(items, `{"role":"user","content":"LAST: say hi"}`)
	body := func(trunc string) string {
		return `{"model":"` + vllmModel + `","instructions":"KEEP: be brief.","max_output_tokens":16,` + trunc +
			`"input":[` + strings.Join(items, ",") + `]}`
	}
	code, _, v := rawPost(t, e.base+"/v1/responses", adminKey, body(""))
	if code != 400 || !strings.Contains(toJSON(v), "context_length_exceeded") {
		t.Fatalf("without truncation: %d %v, want 400 context_length_exceeded", code, v)
	}
	code, _, v = rawPost(t, e.base+"/v1/responses", adminKey, body(`"truncation":"auto",`))
	if code != 200 {
		t.Fatalf("truncation auto: %d %v", code, v)
	}
	if v["truncation"] != "auto" {
		t.Errorf("truncation echoed %v", v["truncation"])
	}
	var sent struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(e.vllm.LastBody(chatPath), &sent); err != nil {
		t.Fatal(err)
	}
	m := sent.Messages
	if len(m) < 2 || len(m) >= 14 || !strings.Contains(m[0].Content, "KEEP") || !strings.Contains(m[len(m)-1].Content, "LAST") ||
		m[1].Role != "user" {
		t.Fatalf("sent %d messages; want the instructions, the newest whole turns and the last one", len(m))
	}
	if strings.Contains(m[1].Content, "turn a") {
		t.Errorf("the oldest turn was kept")
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestResponses_EchoesPreviousResponseID: a chained response names the
// response it continues (the keeper takes the field out of the body
// before the translator reads it; it said null).
func TestResponses_EchoesPreviousResponseID(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	first, err := e.client.Responses.New(ctx, respParams(ollamaModel, "Hello"))
	if err != nil {
		t.Fatal(err)
	}
	p := respParams(ollamaModel, "And then?")
	p.PreviousResponseID = openai.String(first.ID)
	second, err := e.client.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if second.PreviousResponseID != first.ID {
		t.Errorf("previous_response_id = %q, want %q", second.PreviousResponseID, first.ID)
	}
}
