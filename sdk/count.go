package sdk

import (
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// TokenCountAdapter is implemented by an adapter whose engine counts a
// request's input tokens with the model's own tokenizer and chat template
// (ABI 2.7; vLLM's /tokenize). The SDK then sets the adapter's manifest
// CountsTokens, and near a model's context limit the host counts a request
// the backend's way: it calls EncodeCountRequest for the backend request,
// sends that request itself (the host owns the connection, the time limit,
// a memo of answers and the back-off from a backend that lacks the route)
// and calls DecodeCountResponse with a 200 answer's body. Whatever fails,
// the host counts offline with its generic tokenizer; an adapter without
// this interface is never asked.
type TokenCountAdapter interface {
	// EncodeCountRequest writes the backend request that counts req's
	// input tokens exactly as the engine will count them when it
	// generates for req (the same messages, tools and template arguments
	// EncodeRequest sends), and sets meta "path" (and optionally
	// "method", "content-type") on out. req is the canonical request as
	// EncodeRequest gets it (ContextLength set, images after NeedImages
	// available through c.Image). Return ErrUnsupported for a request
	// the engine cannot count; BadInput for one it would refuse.
	EncodeCountRequest(c *Call, req *canon.ChatRequest, out *Output) error
	// DecodeCountResponse reads the backend's answer into tc: Count, and
	// MaxModelLen when the engine reports the model's context window (0
	// otherwise). An answer without a count is BadInput.
	DecodeCountResponse(c *Call, body []byte, tc *canon.TokenCount) error
}

// dispatchCountAdapter runs the count ops of an adapter (ABI 2.7).
func (p *Plugin) dispatchCountAdapter(a TokenCountAdapter, c *Call, op abi.Op, payload []byte) error {
	if op == abi.OpCountRequestEncode {
		if err := p.req.DecodeJSON(payload); err != nil {
			return BadInput(err.Error())
		}
		p.hostHints(c)
		return a.EncodeCountRequest(c, &p.req, &p.out)
	}
	// abi.OpCountResponseDecode
	var tc canon.TokenCount
	if err := a.DecodeCountResponse(c, payload, &tc); err != nil {
		return err
	}
	tc.Estimate = false // the engine's own count
	p.out.Body = tc.AppendJSON(p.out.Body)
	return nil
}
