package responses

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// EncodeResponse writes the Response object of a non-streamed answer:
// output items in order reasoning, message, function calls (the order an
// engine produces them), status completed or, on a length or content
// filter finish, incomplete with incomplete_details.
func (t *Translator) EncodeResponse(c *sdk.Call, resp *canon.ChatResponse, out *sdk.Output) error {
	var h ids
	h.read(c, resp.ID, resp.Model, resp.Created)
	var items [8]item
	list := items[:0]
	o := outcome{status: statusCompleted}
	if len(resp.Choices) > 0 {
		ch := &resp.Choices[0]
		m := &ch.Message
		o = outcomeOf(ch.FinishReason)
		if m.Reasoning != "" {
			list = append(list, item{kind: kindReasoning, text: m.Reasoning})
		}
		if text := m.Text(); text != "" || len(m.ToolCalls) == 0 {
			list = append(list, item{kind: kindMessage, text: text})
		}
		for i := range m.ToolCalls {
			tc := &m.ToolCalls[i]
			list = append(list, item{kind: kindFunction, tool: i, callID: tc.ID, name: tc.Name, text: tc.Arguments})
		}
	}
	out.Body = appendResponse(out.Body, &h, &o, list, resp.Usage)
	return nil
}
