package vllm

import (
	"github.com/mindrouter/mindrouter/sdk/abi"

	"strconv"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// jsonObjectSchema replaces a bare json_object response format: recent vLLM
// builds reject {"type":"json_object"} on some structured-output backends,
// while a json_schema whose schema is any object means the same thing.
var jsonObjectSchema = []byte(`{"type":"json_schema","json_schema":{"name":"json_response","schema":{"type":"object"}}}`)

// Fixed fragments, kept as []byte so writing them never allocates.
var (
	rawStreamOptions = []byte(`{"include_usage":true,"continuous_usage_stats":false}`)
	rawObjectSchema  = []byte(`{"type":"object"}`)
	rawThinkingOn    = []byte(`{"enable_thinking":true}`)
	rawThinkingOff   = []byte(`{"enable_thinking":false}`)
)

// EncodeRequest writes the vLLM /v1/chat/completions body for req.
func (a *Adapter) EncodeRequest(c *sdk.Call, req *canon.ChatRequest, out *sdk.Output) error {
	if len(req.Prompt) > 0 {
		return a.encodeCompletion(c, req, out)
	}
	w := &a.w
	if err := a.startChat(c, req, out); err != nil {
		return err
	}

	if req.Stream {
		w.Key("stream")
		w.Bool(true)
		// Always ask for usage: the gateway accounts tokens whether or not
		// the client wants to see them.
		w.Key("stream_options")
		w.Raw(rawStreamOptions)
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
		// vLLM answers in OpenAI's logprobs shape; top_logprobs is capped
		// by the server's --max-logprobs (20 by default).
		w.Key("logprobs")
		w.Bool(true)
		if req.TopLogprobs > 0 {
			w.Key("top_logprobs")
			w.Int(int64(req.TopLogprobs))
		}
	}
	writeSampling(w, req)

	if err := writeTools(w, req); err != nil {
		out.Body = w.B[:0]
		return err
	}
	if tc := req.ToolChoice; tc != nil {
		switch tc.Mode {
		case canon.ToolChoiceAuto, canon.ToolChoiceNone, canon.ToolChoiceRequired:
			w.Key("tool_choice")
			w.Str(string(tc.Mode))
		case canon.ToolChoiceFunction:
			if tc.Name == "" {
				out.Body = w.B[:0]
				return sdk.BadInput("tool_choice: a function tool choice needs a name")
			}
			w.Key("tool_choice")
			w.Obj()
			w.Key("type")
			w.Str("function")
			w.Key("function")
			w.Obj()
			w.Key("name")
			w.Str(tc.Name)
			w.EndObj()
			w.EndObj()
		case "":
		default:
			out.Body = w.B[:0]
			return sdk.BadInput("tool_choice: unsupported mode " + strconv.Quote(string(tc.Mode)))
		}
	}
	if req.ParallelToolCalls != nil {
		w.Key("parallel_tool_calls")
		w.Bool(*req.ParallelToolCalls)
	}

	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case canon.FormatText, "":
			// vLLM's default; nothing to send.
		case canon.FormatJSONObject:
			w.Key("response_format")
			w.Raw(jsonObjectSchema)
		case canon.FormatJSONSchema:
			w.Key("response_format")
			w.Obj()
			w.Key("type")
			w.Str("json_schema")
			w.Key("json_schema")
			w.Obj()
			w.Key("name")
			if rf.Name != "" {
				w.Str(rf.Name)
			} else {
				w.Str("response")
			}
			w.Key("schema")
			if len(rf.Schema) > 0 {
				w.Raw(rf.Schema)
			} else {
				w.Raw(rawObjectSchema)
			}
			if rf.Strict {
				w.Key("strict")
				w.Bool(true)
			}
			w.EndObj()
			w.EndObj()
		default:
			out.Body = w.B[:0]
			return sdk.BadInput("response_format: unsupported type " + strconv.Quote(string(rf.Type)))
		}
	}

	if err := writeThinking(w, req.Think, true); err != nil {
		out.Body = w.B[:0]
		return err
	}
	if req.User != "" {
		w.Key("user")
		w.Str(req.User)
	}
	w.EndObj()
	out.Body = w.B
	out.SetMeta(abi.MetaPath, "/v1/chat/completions")
	out.SetMeta(abi.MetaMethod, "POST")
	out.SetMeta(abi.MetaContentType, "application/json")
	return nil
}

// startChat checks req's messages, inlines its images and opens the
// body in a.w: the model and the messages, as the chat and count requests
// share them.
func (a *Adapter) startChat(c *sdk.Call, req *canon.ChatRequest, out *sdk.Output) error {
	if len(req.Messages) == 0 {
		return sdk.BadInput("messages: at least one message is required")
	}
	if err := inlineImages(c, req.Messages); err != nil {
		return err
	}
	w := &a.w
	w.Reset()
	w.B = out.Body[:0]
	w.Obj()
	if req.Model != "" {
		w.Key("model")
		w.Str(req.Model)
	}
	w.Key("messages")
	w.Arr()
	for i := range req.Messages {
		if err := writeMessage(w, &req.Messages[i], i); err != nil {
			out.Body = w.B[:0]
			return err
		}
	}
	w.EndArr()
	return nil
}

// writeTools writes req's tools, when it has any.
func writeTools(w *jsonw.W, req *canon.ChatRequest) error {
	if len(req.Tools) == 0 {
		return nil
	}
	w.Key("tools")
	w.Arr()
	for i := range req.Tools {
		t := &req.Tools[i]
		if t.Name == "" {
			return sdk.BadInput("tools[" + strconv.Itoa(i) + "].name: a tool needs a name")
		}
		w.Obj()
		w.Key("type")
		w.Str("function")
		w.Key("function")
		w.Obj()
		w.Key("name")
		w.Str(t.Name)
		if t.Description != "" {
			w.Key("description")
			w.Str(t.Description)
		}
		if len(t.Parameters) > 0 {
			w.Key("parameters")
			w.Raw(t.Parameters)
		}
		if t.Strict {
			w.Key("strict")
			w.Bool(true)
		}
		w.EndObj()
		w.EndObj()
	}
	w.EndArr()
	return nil
}

// writeThinking writes the thinking switch: chat_template_kwargs'
// enable_thinking, and with effort reasoning_effort for a level (the
// chat template sees only the former).
func writeThinking(w *jsonw.W, think canon.Think, effort bool) error {
	switch think {
	case canon.ThinkUnset:
	case canon.ThinkOn:
		w.Key("chat_template_kwargs")
		w.Raw(rawThinkingOn)
	case canon.ThinkOff:
		w.Key("chat_template_kwargs")
		w.Raw(rawThinkingOff)
	case canon.ThinkLow, canon.ThinkMedium, canon.ThinkHigh:
		if effort {
			w.Key("reasoning_effort")
			w.Str(string(think))
		}
		w.Key("chat_template_kwargs")
		w.Raw(rawThinkingOn)
	default:
		return sdk.BadInput("think: unsupported setting " + strconv.Quote(string(think)))
	}
	return nil
}

// writeSampling writes the sampling fields chat and text completions share.
func writeSampling(w *jsonw.W, req *canon.ChatRequest) {
	optFloat(w, "temperature", req.Temperature)
	optFloat(w, "top_p", req.TopP)
	if req.TopK != nil {
		w.Key("top_k")
		w.Int(int64(*req.TopK))
	}
	optFloat(w, "min_p", req.MinP)
	optFloat(w, "repetition_penalty", req.RepetitionPenalty)
	optFloat(w, "frequency_penalty", req.FrequencyPenalty)
	optFloat(w, "presence_penalty", req.PresencePenalty)
	if req.Seed != nil {
		w.Key("seed")
		w.Int(*req.Seed)
	}
	if len(req.Stop) > 0 {
		w.Key("stop")
		w.Arr()
		for _, s := range req.Stop {
			w.Str(s)
		}
		w.EndArr()
	}
}

func optFloat(w *jsonw.W, key string, v *float64) {
	if v != nil {
		w.Key(key)
		w.Float(*v)
	}
}

func writeMessage(w *jsonw.W, m *canon.Message, i int) error {
	switch m.Role {
	case canon.RoleSystem, canon.RoleUser, canon.RoleAssistant, canon.RoleTool:
	default:
		return sdk.BadInput("messages[" + strconv.Itoa(i) + "].role: unsupported role " + strconv.Quote(string(m.Role)))
	}
	w.Obj()
	w.Key("role")
	w.Str(string(m.Role))
	w.Key("content")
	if m.Role == canon.RoleAssistant && len(m.ToolCalls) > 0 && isEmptyText(m.Content) {
		w.Null()
	} else if err := writeContent(w, m.Content, i); err != nil {
		return err
	}
	if m.Name != "" {
		w.Key("name")
		w.Str(m.Name)
	}
	if m.Role == canon.RoleAssistant {
		if m.Reasoning != "" {
			// vLLM ≥ 0.11 hands assistant "reasoning" to the chat template
			// (as reasoning and reasoning_content) for interleaved thinking.
			w.Key("reasoning")
			w.Str(m.Reasoning)
		}
		if len(m.ToolCalls) > 0 {
			w.Key("tool_calls")
			w.Arr()
			for j := range m.ToolCalls {
				tc := &m.ToolCalls[j]
				w.Obj()
				w.Key("id")
				w.Str(tc.ID)
				w.Key("type")
				w.Str("function")
				w.Key("function")
				w.Obj()
				w.Key("name")
				w.Str(tc.Name)
				w.Key("arguments")
				// vLLM json.loads the arguments before rendering the chat
				// template; an empty string would fail the whole request.
				if tc.Arguments == "" {
					w.Str("{}")
				} else {
					w.Str(tc.Arguments)
				}
				w.EndObj()
				w.EndObj()
			}
			w.EndArr()
		}
	}
	if m.Role == canon.RoleTool {
		w.Key("tool_call_id")
		w.Str(m.ToolCallID)
	}
	w.EndObj()
	return nil
}

func isEmptyText(parts []canon.Part) bool {
	for i := range parts {
		if parts[i].Type != canon.PartText || parts[i].Text != "" {
			return false
		}
	}
	return true
}

// writeContent writes text-only content as one string and anything else as
// OpenAI content parts.
func writeContent(w *jsonw.W, parts []canon.Part, i int) error {
	textOnly := true
	for j := range parts {
		if parts[j].Type != canon.PartText {
			textOnly = false
			break
		}
	}
	if textOnly {
		if len(parts) == 1 {
			w.Str(parts[0].Text)
			return nil
		}
		openStr(w)
		for j := range parts {
			w.B = jsonw.Escaped(w.B, parts[j].Text)
		}
		w.B = append(w.B, '"')
		return nil
	}
	w.Arr()
	for j := range parts {
		p := &parts[j]
		switch p.Type {
		case canon.PartText:
			w.Obj()
			w.Key("type")
			w.Str("text")
			w.Key("text")
			w.Str(p.Text)
			w.EndObj()
		case canon.PartImage:
			if p.URL == "" && p.Data == "" {
				return sdk.BadInput("messages[" + strconv.Itoa(i) + "].content[" + strconv.Itoa(j) + "]: an image needs a URL or data")
			}
			w.Obj()
			w.Key("type")
			w.Str("image_url")
			w.Key("image_url")
			w.Obj()
			w.Key("url")
			if p.URL != "" {
				w.Str(p.URL)
			} else {
				mt := p.MediaType
				if mt == "" {
					mt = "application/octet-stream"
				}
				openStr(w)
				w.B = append(w.B, "data:"...)
				w.B = jsonw.Escaped(w.B, mt)
				w.B = append(w.B, ";base64,"...)
				w.B = jsonw.Escaped(w.B, p.Data)
				w.B = append(w.B, '"')
			}
			if p.Detail != "" {
				w.Key("detail")
				w.Str(p.Detail)
			}
			w.EndObj()
			w.EndObj()
		default:
			return sdk.BadInput("messages[" + strconv.Itoa(i) + "].content[" + strconv.Itoa(j) + "]: unsupported part type " + strconv.Quote(string(p.Type)))
		}
	}
	w.EndArr()
	return nil
}

// openStr starts a string value in w (commas included) and leaves it open:
// the caller appends escaped text and the closing quote.
func openStr(w *jsonw.W) {
	w.Str("")
	w.B = w.B[:len(w.B)-1]
}
