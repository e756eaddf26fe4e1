package vllm

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Exact counts (ABI 2.7, sdk.TokenCountAdapter). Near a model's context
// limit the gateway counts a request bound for a vLLM backend with that
// backend's own tokenizer and chat template: POST /tokenize with vLLM's
// TokenizeChatRequest (vllm/entrypoints/serve/tokenize/protocol.py: model,
// messages, add_generation_prompt, continue_final_message, chat_template,
// chat_template_kwargs, tools; answer TokenizeResponse {count,
// max_model_len, tokens}). The body is written by the same code as the
// /v1/chat/completions body (startChat, writeTools, writeThinking), so
// /tokenize sees exactly what generation will (content parts, images
// inlined, tool calls, enable_thinking); only the fields
// TokenizeChatRequest knows are written (vLLM would accept the rest but log
// "fields were present in the request but ignored" for each call). The
// gateway sends it, memoises the answers and falls back to its offline
// count when anything fails.

var _ sdk.TokenCountAdapter = (*Adapter)(nil)

// EncodeCountRequest writes the /tokenize body for req. A legacy text
// completion (req.Prompt) is not counted here: the gateway counts it
// offline.
func (a *Adapter) EncodeCountRequest(c *sdk.Call, req *canon.ChatRequest, out *sdk.Output) error {
	if len(req.Prompt) > 0 {
		return sdk.ErrUnsupported
	}
	w := &a.w
	if err := a.startChat(c, req, out); err != nil {
		return err
	}
	if err := writeTools(w, req); err != nil {
		out.Body = w.B[:0]
		return err
	}
	if err := writeThinking(w, req.Think, false); err != nil {
		out.Body = w.B[:0]
		return err
	}
	// The prompt the model answers from, as for generation (vLLM's
	// default too; the adapter never prefills an assistant turn, so
	// continue_final_message never applies).
	w.Key("add_generation_prompt")
	w.Bool(true)
	w.EndObj()
	out.Body = w.B
	out.SetMeta(abi.MetaPath, "/tokenize")
	out.SetMeta(abi.MetaMethod, "POST")
	out.SetMeta(abi.MetaContentType, "application/json")
	return nil
}

// DecodeCountResponse reads TokenizeResponse's count and max_model_len
// (0 when absent). Anything else (an error body, an older server, a proxy
// that serves only /v1) is BadInput.
func (a *Adapter) DecodeCountResponse(c *sdk.Call, body []byte, tc *canon.TokenCount) error {
	v, err := a.p.ParseBytes(body)
	if err != nil {
		return sdk.BadInput("no token count in the answer: " + err.Error())
	}
	n := v.Get("count")
	if n == nil || n.Type() != fastjson.TypeNumber {
		return sdk.BadInput("no token count in the answer")
	}
	count, err := n.Int()
	if err != nil || count < 0 {
		return sdk.BadInput("no token count in the answer")
	}
	tc.Count, tc.MaxModelLen = count, max(v.GetInt("max_model_len"), 0)
	return nil
}
