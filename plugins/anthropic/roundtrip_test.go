package anthropic

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	anth "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// TestRoundTrip_ResponseToHistory: a response the client got (read by the
// SDK) and sent back in the next request's history, as agents do with
// Message.ToParam(), decodes into the assistant message the backend
// produced: the same reasoning, text and tool calls (ids, names and
// arguments as JSON), so a multi-turn conversation loses nothing.
func TestRoundTrip_ResponseToHistory(t *testing.T) {
	p := newPlugin()
	for _, name := range testFiles(t, "responses", ".canon.json") {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "responses", name+".canon.json"))
			if err != nil {
				t.Fatal(err)
			}
			var resp canon.ChatResponse
			if err := resp.DecodeJSON(in); err != nil {
				t.Fatal(err)
			}
			r := call(t, p, abi.OpResponseEncode, 0, nil, in, gwMeta...)
			var m anth.Message
			if err := json.Unmarshal(r.Payload, &m); err != nil {
				t.Fatal(err)
			}
			params := anth.MessageNewParams{Model: "m", MaxTokens: 10, Messages: []anth.MessageParam{
				anth.NewUserMessage(anth.NewTextBlock("q")), m.ToParam(),
			}}
			body, err := json.Marshal(params)
			if err != nil {
				t.Fatal(err)
			}
			req, err := decode(t, string(body))
			if err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			if len(req.Messages) != 2 {
				t.Fatalf("%d messages from %s", len(req.Messages), body)
			}
			got, want := &req.Messages[1], &resp.Choices[0].Message
			if got.Role != canon.RoleAssistant || got.Reasoning != want.Reasoning || got.Text() != want.Text() ||
				len(got.ToolCalls) != len(want.ToolCalls) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
			for i := range got.ToolCalls {
				g, w := &got.ToolCalls[i], &want.ToolCalls[i]
				if g.Name != w.Name || (w.ID != "" && g.ID != w.ID) || g.ID == "" {
					t.Errorf("call %d: %+v want %+v", i, g, w)
				}
				if json.Valid([]byte(w.Arguments)) && w.Arguments != "" && !jsonSame([]byte(g.Arguments), []byte(w.Arguments)) {
					t.Errorf("call %d arguments %s want %s", i, g.Arguments, w.Arguments)
				}
			}
		})
	}
}
