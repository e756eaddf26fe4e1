package fakellm

import (
	"strings"
	"testing"
)

// TestChatAnswersAfterToolResult: after a tool's result the model answers
// in text, also when a user message follows the result (Claude Code
// sends reminders there); a new question after an answer calls a tool
// again. Before, only a result as the very last message counted, and
// Claude Code's main loop never ended.
func TestChatAnswersAfterToolResult(t *testing.T) {
	_, url := startServer(t, Config{Tokens: 6})
	tools := `"tools":[{"type":"function","function":{"name":"ls","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]`
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}`
	for _, tc := range []struct {
		name, msgs string
		tool       bool
	}{
		{"question", `{"role":"user","content":"list"}`, true},
		{"result last", `{"role":"user","content":"list"},` + call + `,{"role":"tool","tool_call_id":"c1","content":"a b"}`, false},
		{"reminder after the result", `{"role":"user","content":"list"},` + call + `,{"role":"tool","tool_call_id":"c1","content":"a b"},{"role":"user","content":"<system-reminder>x</system-reminder>"}`, false},
		{"new question after an answer", `{"role":"user","content":"list"},` + call + `,{"role":"tool","tool_call_id":"c1","content":"a b"},{"role":"assistant","content":"done"},{"role":"user","content":"again"}`, true},
	} {
		code, _, body := post(t, url+"/v1/chat/completions", `{"model":"llama3.1-8b","messages":[`+tc.msgs+`],`+tools+`}`)
		if code != 200 {
			t.Fatalf("%s: %d %s", tc.name, code, body)
		}
		if got := strings.Contains(string(body), `"tool_calls":[{`); got != tc.tool {
			t.Errorf("%s: tool call %v, want %v: %s", tc.name, got, tc.tool, body)
		}
	}
}

// TestChatToolTurns: with ToolTurns 1 a conversation gets one tool call;
// a new user turn after it is answered in text.
func TestChatToolTurns(t *testing.T) {
	_, url := startServer(t, Config{Tokens: 6, ToolTurns: 1})
	tools := `"tools":[{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}]`
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}`
	for _, tc := range []struct {
		msgs string
		tool bool
	}{
		{`{"role":"user","content":"list"}`, true},
		{`{"role":"user","content":"list"},` + call + `,{"role":"tool","tool_call_id":"c1","content":"a"},{"role":"assistant","content":"done"},{"role":"user","content":"again"}`, false},
	} {
		_, _, body := post(t, url+"/v1/chat/completions", `{"model":"llama3.1-8b","messages":[`+tc.msgs+`],`+tools+`}`)
		if got := strings.Contains(string(body), `"tool_calls":[{`); got != tc.tool {
			t.Errorf("tool call %v, want %v: %s", got, tc.tool, body)
		}
	}
}
