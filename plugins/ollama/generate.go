package ollama

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// encodeGenerate writes a legacy text completion (canon.ChatRequest with
// a Prompt) as Ollama's POST /api/generate with raw: true, so the prompt
// reaches the model as it is, without the model's chat template
// (https://github.com/ollama/ollama/blob/main/docs/api.md, "Generate a
// completion", raw mode). Ollama completes one prompt per request and
// writes no legacy logprobs; chat-only fields are refused, not dropped.
func (a *Adapter) encodeGenerate(req *canon.ChatRequest, out *sdk.Output) error {
	switch {
	case len(req.Prompt) > 1:
		return sdk.BadInput("Ollama backends complete one prompt per request")
	case len(req.Messages) > 0:
		return sdk.BadInput("a completion takes a prompt, not messages")
	case req.Logprobs:
		return sdk.BadInput("logprobs are not supported for text completions on Ollama backends")
	case len(req.Tools) > 0 || req.ToolChoice != nil:
		return sdk.BadInput("tools are not supported by text completions")
	case req.ResponseFormat != nil && req.ResponseFormat.Type != canon.FormatText:
		return sdk.BadInput("response_format is not supported by text completions")
	}
	b := append(out.Body[:0], `{"model":`...)
	b = jsonw.String(b, req.Model)
	b = append(b, `,"prompt":`...)
	b = jsonw.String(b, req.Prompt[0])
	b = append(b, `,"raw":true,"stream":`...)
	b = jsonw.Bool(b, req.Stream)
	b = appendOptions(b, req)
	out.Body = append(b, '}')
	out.SetMeta(abi.MetaPath, "/api/generate")
	out.SetMeta(abi.MetaMethod, "POST")
	out.SetMeta(abi.MetaContentType, "application/json")
	return nil
}

// generateText returns the text of an /api/generate answer or stream line
// ("response" where /api/chat has "message"), and whether it is one.
func generateText(v *fastjson.Value) (string, bool) {
	r := v.Get("response")
	if r == nil || r.Type() != fastjson.TypeString {
		return "", false
	}
	return string(r.GetStringBytes()), true
}
