package ollamaapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/ollama"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// The round trips go through the Ollama adapter (package ollama), whose
// wire format is the one this translator speaks: an Ollama client's request
// decoded here and encoded for an Ollama backend must say the same thing,
// and an Ollama backend's response decoded there and encoded here must give
// the client what the backend said.

func newAdapter() *sdk.Plugin { return sdk.NewAdapter(ollama.Manifest(), ollama.New()) }

func jsonMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m
}

// TestRoundTrip_Request: every chat request in testdata, through canonical
// form to the Ollama adapter's backend request, keeps its messages, tools,
// format, think and sampling options. What is not carried is listed:
// made-up tool-call ids, num_ctx and keep_alive (the gateway's business),
// top_k 0 (Ollama's "off") written as -1, num_predict <= 0 (no limit)
// written as nothing.
func TestRoundTrip_Request(t *testing.T) {
	tr, ad := newPlugin(), newAdapter()
	for _, name := range testFiles(t, "requests", ".req.json") {
		if routeOf(name) != RouteChat {
			continue
		}
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "requests", name+".req.json"))
			if err != nil {
				t.Fatal(err)
			}
			r := call(t, tr, abi.OpRequestDecode, 0, nil, body, abi.MetaRoute, RouteChat)
			if r.Status != abi.StatusOK {
				t.Fatal(r.Status, r.Error)
			}
			r = call(t, ad, abi.OpRequestEncode, 0, nil, r.Payload)
			if r.Status != abi.StatusOK {
				t.Fatal(r.Status, r.Error)
			}
			in, out := jsonMap(t, body), jsonMap(t, r.Payload)
			normalizeRequest(in, true)
			normalizeRequest(out, false)
			if !reflect.DeepEqual(in, out) {
				a, _ := json.Marshal(in)
				b, _ := json.Marshal(out)
				t.Fatalf("client sent  %s\nbackend got %s", a, b)
			}
		})
	}
}

// normalizeRequest removes from an /api/chat body what the round trip
// does not carry (see TestRoundTrip_Request) and fills defaults both sides
// mean alike.
func normalizeRequest(m map[string]any, client bool) {
	delete(m, "keep_alive")
	if _, ok := m["stream"]; !ok {
		m["stream"] = true
	}
	if opts, ok := m["options"].(map[string]any); ok {
		delete(opts, "num_ctx")
		delete(opts, "mirostat")
		if client {
			if n, ok := opts["num_predict"].(float64); ok && n <= 0 {
				delete(opts, "num_predict")
			}
			if k, ok := opts["top_k"].(float64); ok && k <= 0 {
				opts["top_k"] = -1.0
			}
		}
		if len(opts) == 0 {
			delete(m, "options")
		}
	}
	if tools, ok := m["tools"].([]any); ok {
		for _, tl := range tools {
			delete(tl.(map[string]any), "type")
		}
	}
	msgs, _ := m["messages"].([]any)
	names := map[any]any{} // call id -> tool name
	for _, mv := range msgs {
		msg := mv.(map[string]any)
		for _, cv := range asSlice(msg["tool_calls"]) {
			c := cv.(map[string]any)
			names[c["id"]] = c["function"].(map[string]any)["name"]
		}
		// A result naming its call by id reaches Ollama with that call's
		// tool name too.
		if id, ok := msg["tool_call_id"]; ok && client && msg["tool_name"] == nil {
			msg["tool_name"] = names[id]
		}
		delete(msg, "tool_call_id") // ids: the translator's, checked in TestDecodeRequest_ToolCallIDs
		if msg["content"] == "" {
			delete(msg, "content")
		}
		for _, cv := range asSlice(msg["tool_calls"]) {
			c := cv.(map[string]any)
			delete(c, "id")
			fn := c["function"].(map[string]any)
			delete(fn, "index")
		}
	}
}

// TestRoundTrip_Response: recorded Ollama responses (the adapter's
// testdata, from Ollama 0.12), decoded by the adapter and encoded here for
// /api/chat, give the client the backend's message, done_reason and
// counts. Not carried: durations (the gateway does not time the backend),
// logprobs, and the backend's own model name and time (the gateway's are
// used).
func TestRoundTrip_Response(t *testing.T) {
	ad, tr := newAdapter(), newPlugin()
	files, _ := filepath.Glob(filepath.Join("..", "ollama", "testdata", "response", "*.ollama.json"))
	if len(files) == 0 {
		t.Fatal("no adapter response testdata")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".ollama.json")
		if name == "think_in_content" {
			continue // the adapter splits <think> out of content on purpose
		}
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			r := call(t, ad, abi.OpResponseDecode, 0, nil, body)
			if r.Status != abi.StatusOK {
				t.Fatal(r.Status, r.Error)
			}
			r = call(t, tr, abi.OpResponseEncode, 0, nil, r.Payload, routeMeta(RouteChat)...)
			if r.Status != abi.StatusOK {
				t.Fatal(r.Status, r.Error)
			}
			in, out := jsonMap(t, body), jsonMap(t, r.Payload)
			for _, m := range []map[string]any{in, out} {
				for _, k := range []string{"model", "created_at", "total_duration", "load_duration",
					"prompt_eval_duration", "eval_duration", "logprobs"} {
					delete(m, k)
				}
				msg := m["message"].(map[string]any)
				calls, _ := msg["tool_calls"].([]any)
				for i, cv := range calls {
					c := cv.(map[string]any)
					delete(c, "id") // the adapter makes up ids Ollama did not send
					fn := c["function"].(map[string]any)
					fn["index"] = float64(i)
					if fn["arguments"] == nil {
						fn["arguments"] = map[string]any{}
					}
				}
			}
			if !reflect.DeepEqual(in, out) {
				a, _ := json.Marshal(in)
				b, _ := json.Marshal(out)
				t.Fatalf("backend sent %s\nclient got  %s", a, b)
			}
		})
	}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }
