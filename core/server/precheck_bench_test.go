package server

import (
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
)

// BenchmarkPrecheck is the pre-check of a 2 KiB OpenAI chat body (a
// system prompt, a tool, a short conversation) with the routing fields
// alone and with the markers of what the request needs: the cost of
// reading the needs natively.
func BenchmarkPrecheck(b *testing.B) {
	s := newTestServer(b, nil)
	routing := sdk.Routing{Model: "model", Stream: "stream", IncludeUsage: "stream_options.include_usage",
		MaxTokens: []string{"max_completion_tokens", "max_tokens"}}
	withNeeds := routing
	withNeeds.Vision, withNeeds.Tools = []string{"*.type=image_url"}, []string{"tools"}
	withNeeds.Structured = []string{"response_format.type=json_object", "response_format.type=json_schema"}
	body := []byte(`{"model":"llama-3.1-8b-instruct","messages":[` +
		`{"role":"system","content":"You are a helpful assistant. Answer concisely, cite sources when you can, and say so when you do not know. Format code with Markdown fences."},` +
		`{"role":"user","content":"What is the capital of France, and what is it famous for? Please give three examples."},` +
		`{"role":"assistant","tool_calls":[{"id":"call_abc123","type":"function","function":{"name":"search","arguments":"{\"query\":\"Paris famous landmarks\",\"limit\":3}"}}]},` +
		`{"role":"tool","tool_call_id":"call_abc123","content":"[{\"title\":\"Eiffel Tower\",\"snippet\":\"The wrought-iron lattice tower on the Champ de Mars.\"},{\"title\":\"Louvre\",\"snippet\":\"The world's most-visited art museum.\"}]"},` +
		`{"role":"assistant","content":"Paris is the capital of France. It is famous for the Eiffel Tower, the Louvre and Notre-Dame."},` +
		`{"role":"user","content":[{"type":"text","text":"Thanks! Now tell me about its cafés, briefly."}]}],` +
		`"stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"temperature":0.7,"top_p":0.9,"seed":42,"stop":["<|eot_id|>"],` +
		`"tools":[{"type":"function","function":{"name":"search","description":"Search the web.","parameters":{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":10}},"required":["query"]}}}],` +
		`"tool_choice":"auto","user":"user-1234"}`)
	for _, tc := range []struct {
		name    string
		routing *sdk.Routing
	}{{"routing", &routing}, {"needs", &withNeeds}} {
		b.Run(tc.name, func(b *testing.B) {
			ex := newEx(s, nil)
			ex.setRoute(chatRoute(tc.routing))
			ex.body = append(ex.body[:0], body...)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := (precheck{s}).run(nil, ex); err != nil || !ex.routed {
					b.Fatal(err)
				}
				ex.routed = false
				if n := ex.needs(); !n.Generate || n.Tools != (tc.name == "needs") {
					b.Fatalf("needs %+v", n)
				}
			}
		})
	}
}
