package ollama

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mindrouter/mindrouter/plugins/internal/rawjson"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func TestDecodeResponse_Golden(t *testing.T) {
	for _, name := range testFiles(t, "response", ".ollama.json") {
		t.Run(name, func(t *testing.T) {
			h := newHarness()
			r := h.call(t, abi.OpResponseDecode, 0, nil, readFile(t, "response/"+name+".ollama.json"))
			if r.Status != abi.StatusOK {
				t.Fatalf("status %s: %s", r.Status, r.Error)
			}
			var resp canon.ChatResponse
			if err := resp.DecodeJSON(r.Payload); err != nil {
				t.Fatalf("output does not decode: %v", err)
			}
			golden(t, "response/"+name+".canon.json", r.Payload)
		})
	}
}

func TestDecodeResponse_Typed(t *testing.T) {
	var resp canon.ChatResponse
	err := New().DecodeResponse(&sdk.Call{}, readFile(t, "response/tool_calls.ollama.json"), &resp)
	if err != nil {
		t.Fatal(err)
	}
	want := canon.ChatResponse{
		Model:   "qwen3",
		Created: 1761599074,
		Choices: []canon.Choice{{
			Message: canon.Message{
				Role:      canon.RoleAssistant,
				Reasoning: "The user wants weather in two cities.",
				ToolCalls: []canon.ToolCall{
					{ID: "call_w1x2y3z4", Name: "get_temperature", Arguments: `{"city":"New York"}`},
					{ID: "call_1", Name: "get_conditions", Arguments: `{"city":"London","opts":{"units":"metric","days":[1,2.5,-3e2]},"note":"tab\there \"q\" é \u2028","ok":true,"none":null}`},
					{ID: "call_2", Name: "now", Arguments: `{}`},
				},
			},
			FinishReason: canon.FinishToolCalls,
		}},
		Usage: &canon.Usage{PromptTokens: 219, CompletionTokens: 68, TotalTokens: 287},
	}
	if d := cmp.Diff(want, resp); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(resp.Choices[0].Message.ToolCalls[1].Arguments), &args); err != nil {
		t.Errorf("arguments are not JSON: %v", err)
	}
}

func TestDecodeResponse_Errors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"error":"model 'x' not found"}`, "backend error: model 'x' not found"},
		{`not json`, "invalid JSON"},
		{`[1,2]`, "not a JSON object"},
		{`{"message":"hi"}`, "message is not an object"},
		{`{"message":{"tool_calls":{}}}`, "tool_calls is not an array"},
		{`{"message":{"tool_calls":[{"function":{"arguments":{}}}]}}`, "function.name is missing"},
		{`{"message":{"tool_calls":[1]}}`, "function is not an object"},
	} {
		var resp canon.ChatResponse
		err := New().DecodeResponse(&sdk.Call{}, []byte(tc.body), &resp)
		var in *sdk.InputError
		if !asInputError(err, &in) || !strings.Contains(in.Msg, tc.want) {
			t.Errorf("%s: error %v, want bad input containing %q", tc.body, err, tc.want)
		}
	}
}

func TestDecodeResponse_Lenient(t *testing.T) {
	// A bare done message, string arguments and odd counts still decode.
	body := `{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":"{\"a\":1}"}}]},"done":true,"prompt_eval_count":-5,"eval_count":"7"}`
	var resp canon.ChatResponse
	if err := New().DecodeResponse(&sdk.Call{}, []byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.ToolCalls[0].Arguments; got != `{"a":1}` {
		t.Errorf("arguments %q", got)
	}
	if u := *resp.Usage; u != (canon.Usage{}) {
		t.Errorf("usage %+v, want zeros", u)
	}
	if resp.Created != 0 {
		t.Errorf("created %d, want 0", resp.Created)
	}
}

func TestValidNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "1.5": true, "-3e2": true, "1E+9": true, "2.0e-3": true,
		"": false, "-": false, "01": false, "1.": false, ".5": false, "1e": false, "+1": false,
		"NaN": false, "inf": false, "1e+": false, "--1": false,
	} {
		if got := rawjson.ValidNumber([]byte(s)); got != want {
			t.Errorf("validNumber(%q) = %v", s, got)
		}
	}
}
