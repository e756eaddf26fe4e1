package server

import (
	"testing"

	"github.com/mindrouter/mindrouter/core/sched"
	"github.com/mindrouter/mindrouter/sdk"
)

// The server fills sched.Request.Needs from the route's kind and the
// markers its Routing declares, found by the pre-check's scan.
func TestExchange_Needs(t *testing.T) {
	s := newTestServer(t, nil)
	openai := &sdk.Routing{Model: "model", Stream: "stream", IncludeUsage: "stream_options.include_usage",
		MaxTokens: []string{"max_completion_tokens", "max_tokens"},
		Vision:    []string{"*.type=image_url"}, Tools: []string{"tools"},
		Structured: []string{"response_format.type=json_object", "response_format.type=json_schema"}}
	ollama := &sdk.Routing{Model: "model", Stream: "stream", StreamByDflt: true,
		Vision: []string{"*.images"}, Tools: []string{"tools"}, Structured: []string{"format"}}
	mk := func(kind sdk.Endpoint, r *sdk.Routing) *route {
		rt := chatRoute(r)
		rt.kind = kind
		return rt
	}
	gen := sched.Needs{Generate: true}
	for _, tc := range []struct {
		name string
		rt   *route
		body string
		want sched.Needs
	}{
		{"text", mk(sdk.EndpointChat, openai), `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, gen},
		{"image part", mk(sdk.EndpointChat, openai),
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}]}`,
			sched.Needs{Generate: true, Vision: true}},
		{"tools and schema", mk(sdk.EndpointChat, openai),
			`{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"response_format":{"type":"json_schema","json_schema":{}}}`,
			sched.Needs{Generate: true, Tools: true, Structured: true}},
		{"json object", mk(sdk.EndpointChat, openai), `{"model":"m","response_format":{"type":"json_object"}}`,
			sched.Needs{Generate: true, Structured: true}},
		{"empty tools, text format", mk(sdk.EndpointChat, openai), `{"model":"m","tools":[],"response_format":{"type":"text"}}`, gen},
		// A routing field the scan cannot use sends the request to the
		// translator first; the markers still count.
		{"decoded path", mk(sdk.EndpointChat, openai), `{"model":"m","stream":"yes","tools":[1]}`,
			sched.Needs{Generate: true, Tools: true}},
		{"ollama images", mk(sdk.EndpointChat, ollama), `{"model":"m","messages":[{"role":"user","content":"x","images":["AA=="]}]}`,
			sched.Needs{Generate: true, Vision: true}},
		{"ollama format", mk(sdk.EndpointChat, ollama), `{"model":"m","prompt":"x","format":"json","images":[]}`,
			sched.Needs{Generate: true, Structured: true}},
		{"ollama format null", mk(sdk.EndpointChat, ollama), `{"model":"m","prompt":"x","format":null}`, gen},
		{"responses", mk(sdk.EndpointResponses, &sdk.Routing{Model: "model", Vision: []string{"*.type=input_image"}}),
			`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:"}]}]}`,
			sched.Needs{Generate: true, Vision: true}},
		// Ollama embeds with chat models too: no Embed need.
		{"embedding", mk(sdk.EndpointEmbedding, &sdk.Routing{Model: "model"}), `{"model":"m","input":"x"}`, sched.Needs{}},
		{"rerank needs nothing", mk(sdk.EndpointRerank, &sdk.Routing{Model: "model"}), `{"model":"m"}`, sched.Needs{}},
		{"no markers declared", mk(sdk.EndpointChat, &sdk.Routing{Model: "model"}), `{"model":"m","tools":[1]}`, gen},
		// Markers that do not compile are left out; routing still works.
		{"bad markers", mk(sdk.EndpointChat, &sdk.Routing{Model: "model", Tools: []string{"*.a.b"}}), `{"model":"m","a":{"b":1}}`, gen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := newEx(s, nil)
			// A pooled exchange's last request leaves nothing behind.
			ex.sreq.Needs = sched.Needs{Vision: true, Tools: true, Structured: true, Embed: true}
			ex.begin(s, nil)
			if ex.sreq.Needs != (sched.Needs{}) {
				t.Fatalf("begin kept %+v", ex.sreq.Needs)
			}
			ex.setRoute(tc.rt)
			ex.body = append(ex.body[:0], tc.body...)
			if err := (precheck{s}).run(nil, ex); err != nil {
				t.Fatal(err)
			}
			if got := ex.needs(); got != tc.want {
				t.Errorf("needs = %+v, want %+v", got, tc.want)
			}
			if tc.rt.r.Routing.Model != "" && string(ex.buf) != "m" {
				t.Errorf("model %q: the markers broke the routing fields", ex.buf)
			}
		})
	}
}

// A route's marker bits follow the order of Vision, Tools and Structured.
func TestRoutingSpec_Marks(t *testing.T) {
	spec, m := routingSpec(&sdk.Routing{Model: "model", Vision: []string{"*.a", "*.b"}, Tools: []string{"t"},
		Structured: []string{"s=x", "s=y", "u"}})
	if spec == nil {
		t.Fatal("no spec")
	}
	if m != (needMarks{vision: 0b11, tools: 0b100, structured: 0b111000}) {
		t.Errorf("marks %+v", m)
	}
	if spec.Len() != 5 || spec.Index("model") != fieldModel { // model, stream, include_usage, choices, prompts
		t.Errorf("routing fields moved: len %d", spec.Len())
	}
}
