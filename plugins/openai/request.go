package openai

import (
	"github.com/mindrouter/mindrouter/sdk/abi"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// reqFields holds the top-level request fields this translator reads, as
// found in one pass over the body (nil: absent or null). Anything else is
// ignored.
type reqFields struct {
	model, messages, stream, streamOptions                        *fastjson.Value
	maxTokens, maxCompletionTokens                                *fastjson.Value
	temperature, topP, topK, minP                                 *fastjson.Value
	repetitionPenalty, frequencyPenalty, presencePenalty          *fastjson.Value
	seed, stop, n, responseFormat                                 *fastjson.Value
	logprobs, topLogprobs                                         *fastjson.Value
	tools, toolChoice, parallelToolCalls, functions, functionCall *fastjson.Value
	user, safetyIdentifier                                        *fastjson.Value
	think, thinking, chatTemplateKwargs, reasoningEffort          *fastjson.Value
}

func (f *reqFields) set(k []byte, v *fastjson.Value) {
	switch string(k) {
	case "model":
		f.model = v
	case "messages":
		f.messages = v
	case "stream":
		f.stream = v
	case "stream_options":
		f.streamOptions = v
	case "max_tokens":
		f.maxTokens = v
	case "max_completion_tokens":
		f.maxCompletionTokens = v
	case "temperature":
		f.temperature = v
	case "top_p":
		f.topP = v
	case "top_k":
		f.topK = v
	case "min_p":
		f.minP = v
	case "repetition_penalty":
		f.repetitionPenalty = v
	case "frequency_penalty":
		f.frequencyPenalty = v
	case "presence_penalty":
		f.presencePenalty = v
	case "seed":
		f.seed = v
	case "stop":
		f.stop = v
	case "n":
		f.n = v
	case "logprobs":
		f.logprobs = v
	case "top_logprobs":
		f.topLogprobs = v
	case "response_format":
		f.responseFormat = v
	case "tools":
		f.tools = v
	case "tool_choice":
		f.toolChoice = v
	case "parallel_tool_calls":
		f.parallelToolCalls = v
	case "functions":
		f.functions = v
	case "function_call":
		f.functionCall = v
	case "user":
		f.user = v
	case "safety_identifier":
		f.safetyIdentifier = v
	case "think":
		f.think = v
	case "thinking":
		f.thinking = v
	case "chat_template_kwargs":
		f.chatTemplateKwargs = v
	case "reasoning_effort":
		f.reasoningEffort = v
	}
}

// DecodeRequest parses a Chat Completions request body into req.
func (t *Translator) DecodeRequest(c *sdk.Call, body []byte, req *canon.ChatRequest) error {
	route, _ := c.MetaBytes(abi.MetaRoute)
	tokenize, completion := string(route) == RouteTokenize, string(route) == RouteCompletions
	if len(route) > 0 && string(route) != RouteChat && !tokenize && !completion {
		return sdk.BadInput("route " + string(route) + " has no request body to decode")
	}
	o, err := jsonread.Object(&t.p, body)
	if err != nil {
		return err
	}
	var f reqFields
	jsonread.Visit(o, f.set)

	if f.model == nil {
		return jsonread.ErrRequired("model")
	}
	s, ok := jsonread.Str(f.model)
	if !ok {
		return jsonread.ErrType("model", "a string")
	}
	if s == "" {
		return jsonread.ErrRequired("model")
	}
	req.Model = s
	switch {
	case tokenize:
		return decodeTokenize(o, &f, req)
	case completion:
		return decodeCompletion(o, &f, req)
	}
	if err := decodeMessages(f.messages, req); err != nil {
		return err
	}
	if err := decodeSampling(&f, req); err != nil {
		return err
	}
	if err := decodeStreaming(&f, req); err != nil {
		return err
	}
	if err := decodeTools(&f, req); err != nil {
		return err
	}
	if err := decodeResponseFormat(f.responseFormat, req); err != nil {
		return err
	}
	return decodeThinking(&f, req)
}

func decodeStreaming(f *reqFields, req *canon.ChatRequest) error {
	var ok bool
	if f.stream != nil {
		if req.Stream, ok = jsonread.Bool(f.stream); !ok {
			return jsonread.ErrType("stream", "a boolean")
		}
	}
	if f.streamOptions != nil {
		o, err := f.streamOptions.Object()
		if err != nil {
			return jsonread.ErrType("stream_options", "an object")
		}
		if v := o.Get("include_usage"); v != nil && v.Type() != fastjson.TypeNull {
			if req.IncludeUsage, ok = jsonread.Bool(v); !ok {
				return jsonread.ErrType("stream_options.include_usage", "a boolean")
			}
		}
	}
	user, err := jsonread.User(f.user, f.safetyIdentifier)
	if err != nil {
		return err
	}
	if user != "" {
		req.User = user
	}
	return nil
}
