package vllm

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// encodeCompletion writes a legacy text completion (canon.ChatRequest
// with a Prompt) for vLLM's /v1/completions, which takes the prompts as
// they are, without a chat template (vLLM's OpenAI-compatible server,
// "Completions API"). Chat-only fields (tools, response format, thinking)
// are refused rather than dropped. logprobs is the legacy integer.
func (a *Adapter) encodeCompletion(c *sdk.Call, req *canon.ChatRequest, out *sdk.Output) error {
	switch {
	case len(req.Messages) > 0:
		return sdk.BadInput("a completion takes a prompt, not messages")
	case len(req.Tools) > 0 || req.ToolChoice != nil:
		return sdk.BadInput("tools are not supported by text completions")
	case req.ResponseFormat != nil && req.ResponseFormat.Type != canon.FormatText:
		return sdk.BadInput("response_format is not supported by text completions")
	}
	w := &a.w
	w.Reset()
	w.B = out.Body[:0]
	w.Obj()
	if req.Model != "" {
		w.Key("model")
		w.Str(req.Model)
	}
	w.Key("prompt")
	if len(req.Prompt) == 1 {
		w.Str(req.Prompt[0])
	} else {
		w.Arr()
		for _, p := range req.Prompt {
			w.Str(p)
		}
		w.EndArr()
	}
	if req.Stream {
		w.Key("stream")
		w.Bool(true)
		w.Key("stream_options")
		w.Raw(rawStreamOptions) // usage always: the gateway accounts it
	}
	if req.MaxTokens > 0 {
		w.Key("max_tokens")
		w.Int(int64(req.MaxTokens))
	}
	if req.N > 1 {
		w.Key("n")
		w.Int(int64(req.N))
	}
	if req.Logprobs {
		w.Key("logprobs")
		w.Int(int64(req.TopLogprobs))
	}
	writeSampling(w, req)
	if req.User != "" {
		w.Key("user")
		w.Str(req.User)
	}
	w.EndObj()
	out.Body = w.B
	out.SetMeta(abi.MetaPath, "/v1/completions")
	out.SetMeta(abi.MetaMethod, "POST")
	out.SetMeta(abi.MetaContentType, "application/json")
	return nil
}

// completionText fills a text_completion choice's message (it has "text"
// where a chat choice has "message"): the text as the engine wrote it, no
// <think> split (a raw completion has no chat template to add one).
func completionText(ch *fastjson.Value, m *canon.Message) {
	if t := ch.Get("text"); t != nil && t.Type() == fastjson.TypeString {
		if s := string(t.GetStringBytes()); s != "" {
			m.Content = []canon.Part{{Type: canon.PartText, Text: s}}
		}
	}
}
