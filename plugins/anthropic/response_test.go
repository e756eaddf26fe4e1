package anthropic

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	anth "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// gwMeta is what the gateway passes to response and stream encode calls.
var gwMeta = []string{"route", RouteMessages, "id", "chatcmpl-gw42", "model", "client-model", "created", "1710000000"}

// TestEncodeResponse_Golden encodes testdata/responses/*.canon.json with
// gateway meta and compares the bytes with *.json; each must decode with
// anthropic-sdk-go and agree with the canonical response.
func TestEncodeResponse_Golden(t *testing.T) {
	p := newPlugin()
	for _, name := range testFiles(t, "responses", ".canon.json") {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "responses", name+".canon.json"))
			if err != nil {
				t.Fatal(err)
			}
			r := call(t, p, abi.OpResponseEncode, 0, nil, in, gwMeta...)
			if r.Status != abi.StatusOK {
				t.Fatalf("%s: %s", r.Status, r.Error)
			}
			golden(t, filepath.Join("responses", name+".json"), r.Payload)
			var resp canon.ChatResponse
			if err := resp.DecodeJSON(in); err != nil {
				t.Fatal(err)
			}
			var m anth.Message
			if err := json.Unmarshal(r.Payload, &m); err != nil {
				t.Fatalf("anthropic-sdk-go: %v", err)
			}
			checkMessage(t, &m, &resp.Choices[0].Message, resp.Usage)
		})
	}
}

// checkMessage compares a Message as the SDK reads it with the canonical
// message it was made from.
func checkMessage(t *testing.T, m *anth.Message, want *canon.Message, u *canon.Usage) {
	t.Helper()
	if m.ID != "msg_gw42" || m.Model != "client-model" || m.Role != "assistant" || m.Type != "message" || m.StopReason == "" {
		t.Errorf("header: id %q model %q role %q type %q stop %q", m.ID, m.Model, m.Role, m.Type, m.StopReason)
	}
	var thinking, text string
	var calls []anth.ToolUseBlock
	for _, b := range m.Content {
		switch v := b.AsAny().(type) {
		case anth.ThinkingBlock:
			thinking += v.Thinking
		case anth.TextBlock:
			text += v.Text
		case anth.ToolUseBlock:
			calls = append(calls, v)
		default:
			t.Errorf("unexpected block %s", b.RawJSON())
		}
	}
	if thinking != want.Reasoning || text != want.Text() || len(calls) != len(want.ToolCalls) {
		t.Errorf("content: thinking %q text %q calls %d; want %q %q %d", thinking, text, len(calls), want.Reasoning, want.Text(), len(want.ToolCalls))
	}
	for i := range calls {
		tc := &want.ToolCalls[i]
		if calls[i].Name != tc.Name || calls[i].ID == "" || (tc.ID != "" && calls[i].ID != tc.ID) {
			t.Errorf("call %d: %+v want %+v", i, calls[i], tc)
		}
		var in map[string]any
		if err := json.Unmarshal(calls[i].Input, &in); err != nil {
			t.Errorf("call %d input %s: %v", i, calls[i].Input, err)
		}
		if json.Valid([]byte(tc.Arguments)) && !jsonSame(calls[i].Input, []byte(tc.Arguments)) {
			t.Errorf("call %d input %s, arguments %s", i, calls[i].Input, tc.Arguments)
		}
	}
	var wu canon.Usage
	if u != nil {
		wu = *u
	}
	if m.Usage.InputTokens+m.Usage.CacheReadInputTokens != int64(wu.PromptTokens) || m.Usage.OutputTokens != int64(wu.CompletionTokens) ||
		m.Usage.CacheReadInputTokens != int64(wu.CachedTokens) {
		t.Errorf("usage %+v, canonical %+v", m.Usage, wu)
	}
}

func jsonSame(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func TestStopReason(t *testing.T) {
	for _, tc := range []struct {
		fr    canon.FinishReason
		calls bool
		want  string
	}{
		{canon.FinishStop, false, "end_turn"},
		{canon.FinishNone, false, "end_turn"},
		{canon.FinishLength, false, "max_tokens"},
		{canon.FinishLength, true, "max_tokens"},
		{canon.FinishToolCalls, false, "tool_use"},
		{canon.FinishStop, true, "tool_use"},
		{canon.FinishContentFilter, false, "refusal"},
		{"something_new", false, "end_turn"},
	} {
		if got := stopReason(tc.fr, tc.calls); got != tc.want {
			t.Errorf("%q %v: %q want %q", tc.fr, tc.calls, got, tc.want)
		}
	}
}

// TestEncodeResponse_BackendID: without gateway meta the backend's id and
// model are used, prefixed as Anthropic's, and made-up tool ids are stable.
func TestEncodeResponse_BackendID(t *testing.T) {
	in := `{"id":"chatcmpl-abc","model":"bm","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"name":"f","arguments":"{}"}]},"finish_reason":"tool_calls"}]}`
	r := call(t, newPlugin(), abi.OpResponseEncode, 0, nil, []byte(in), "route", RouteMessages)
	if r.Status != abi.StatusOK {
		t.Fatal(r.Error)
	}
	want := `{"id":"msg_abc","type":"message","role":"assistant","model":"bm","content":[{"type":"tool_use","id":"toolu_abc_0","name":"f","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`
	if string(r.Payload) != want {
		t.Fatalf("got  %s\nwant %s", r.Payload, want)
	}
	if !strings.HasPrefix(string(r.Payload), `{"id":"msg_`) {
		t.Fatal("id")
	}
}
