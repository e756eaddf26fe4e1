package responses

import (
	"strings"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// reqFields holds the top-level request fields this translator reads, as
// found in one pass over the body (nil: absent or null). Fields the
// canonical request cannot carry and that change nothing about the answer
// (include, service_tier, prompt_cache_key, stream_options) are ignored,
// as the reference implementation ignores them.
type reqFields struct {
	model, input, instructions, stream, store, background *fastjson.Value
	maxOutputTokens, temperature, topP, metadata, user    *fastjson.Value
	safetyIdentifier, reasoning, text, tools, toolChoice  *fastjson.Value
	parallelToolCalls, previousResponseID, conversation   *fastjson.Value
	prompt, truncation                                    *fastjson.Value
}

func (f *reqFields) set(k []byte, v *fastjson.Value) {
	switch string(k) {
	case "model":
		f.model = v
	case "input":
		f.input = v
	case "instructions":
		f.instructions = v
	case "stream":
		f.stream = v
	case "store":
		f.store = v
	case "background":
		f.background = v
	case "max_output_tokens":
		f.maxOutputTokens = v
	case "temperature":
		f.temperature = v
	case "top_p":
		f.topP = v
	case "metadata":
		f.metadata = v
	case "user":
		f.user = v
	case "safety_identifier":
		f.safetyIdentifier = v
	case "reasoning":
		f.reasoning = v
	case "text":
		f.text = v
	case "tools":
		f.tools = v
	case "tool_choice":
		f.toolChoice = v
	case "parallel_tool_calls":
		f.parallelToolCalls = v
	case "previous_response_id":
		f.previousResponseID = v
	case "conversation":
		f.conversation = v
	case "prompt":
		f.prompt = v
	case "truncation":
		f.truncation = v
	}
}

// ErrNoState is the answer to a previous_response_id or conversation that
// reaches the translator: the host's state keeper consumes and removes
// both before DecodeRequest, so one still present means the gateway keeps
// no state.
const ErrNoState = "previous_response_id needs stored responses, which are off on this gateway"

// DecodeRequest parses a Responses request (or, on the input_tokens route,
// the same body to count) into req.
func (t *Translator) DecodeRequest(c *sdk.Call, body []byte, req *canon.ChatRequest) error {
	route, _ := c.MetaBytes(abi.MetaRoute)
	count := string(route) == RouteInputTokens
	if len(route) > 0 && string(route) != RouteResponses && !count {
		return sdk.BadInput("route " + string(route) + " has no request body to decode")
	}
	o, err := jsonread.Object(&t.p, body)
	if err != nil {
		return err
	}
	var f reqFields
	jsonread.Visit(o, f.set)
	if req.Model, err = jsonread.Model(f.model); err != nil {
		return err
	}
	if err := checkUnsupported(&f, count); err != nil {
		return err
	}
	if err := decodeInstructions(f.instructions, req); err != nil {
		return err
	}
	if err := decodeInput(f.input, req); err != nil {
		return err
	}
	var tl toolList
	if err := decodeTools(&f, req, &tl); err != nil {
		return err
	}
	if count {
		// Only what reaches the model's context counts; sampling fields
		// are not validated for a request that generates nothing.
		return nil
	}
	if err := decodeOptions(&f, req); err != nil {
		return err
	}
	if err := decodeTextFormat(f.text, req); err != nil {
		return err
	}
	if err := decodeReasoning(f.reasoning, req); err != nil {
		return err
	}
	if err := decodeTruncation(f.truncation, req); err != nil {
		return err
	}
	t.echo = writeEcho(c, &f, &tl, &t.st, t.echo)
	if len(tl.dropped) > 0 {
		c.SetDroppedTools(strings.Join(tl.dropped, ","))
	}
	return nil
}

// decodeTruncation reads truncation: "disabled" (the default: an input
// over the context window is refused) or "auto" (the host drops the
// oldest turns until it fits, keeping the system messages and the
// last turn).
func decodeTruncation(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil || v.Type() == fastjson.TypeNull {
		return nil
	}
	s, ok := jsonread.Str(v)
	if !ok {
		return jsonread.ErrType("truncation", "a string")
	}
	switch s {
	case "disabled":
	case "auto":
		req.TruncateOldest = true
	default:
		return sdk.BadInput(`truncation "` + s + `" is not supported (use auto or disabled)`)
	}
	return nil
}

// checkUnsupported refuses what the gateway does not offer, naming the
// field: state the keeper should have consumed, background mode, and
// stored prompt templates. The keeper runs on the responses route only,
// so on the count route stored history is not counted whether or not the
// gateway keeps state.
func checkUnsupported(f *reqFields, count bool) error {
	switch {
	case count && f.previousResponseID != nil:
		return sdk.BadInput("previous_response_id: counting a stored response's history is not supported (send the whole input)")
	case count && f.conversation != nil:
		return sdk.BadInput("conversation: counting a stored conversation is not supported (send the whole input)")
	case f.previousResponseID != nil:
		return sdk.BadInput(ErrNoState)
	case f.conversation != nil:
		return sdk.BadInput("conversation needs stored conversations, which are off on this gateway")
	}
	if f.background != nil {
		b, ok := jsonread.Bool(f.background)
		if !ok {
			return jsonread.ErrType("background", "a boolean")
		}
		if b {
			return sdk.BadInput("background: background mode is not supported on this gateway (send background: false or leave it out)")
		}
	}
	if f.prompt != nil {
		return sdk.BadInput("prompt: stored prompt templates are not supported on this gateway (send instructions and input instead)")
	}
	if f.store != nil {
		if _, ok := jsonread.Bool(f.store); !ok {
			return jsonread.ErrType("store", "a boolean")
		}
	}
	return nil
}

// decodeInstructions puts instructions first, as a system message.
func decodeInstructions(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return nil
	}
	s, ok := jsonread.Str(v)
	if !ok {
		return jsonread.ErrType("instructions", "a string")
	}
	if s != "" {
		req.Messages = append(req.Messages, textMessage(canon.RoleSystem, s))
	}
	return nil
}

func textMessage(role canon.Role, s string) canon.Message {
	return canon.Message{Role: role, Content: []canon.Part{{Type: canon.PartText, Text: s}}}
}

// decodeOptions reads the token limit, sampling, streaming, metadata and
// the end-user id.
func decodeOptions(f *reqFields, req *canon.ChatRequest) error {
	if f.maxOutputTokens != nil {
		n, ok := jsonread.Int(f.maxOutputTokens)
		if !ok {
			return jsonread.ErrType("max_output_tokens", "an integer")
		}
		if n < 1 || n > jsonread.MaxInt32 {
			return sdk.BadInput("max_output_tokens must be between 1 and 2147483647")
		}
		req.MaxTokens = int(n)
	}
	for _, p := range [...]struct {
		v    *fastjson.Value
		name string
		dst  **float64
		max  float64
		rng  string
	}{
		{f.temperature, "temperature", &req.Temperature, 2, "between 0 and 2"},
		{f.topP, "top_p", &req.TopP, 1, "between 0 and 1"},
	} {
		if p.v == nil {
			continue
		}
		x, ok := jsonread.Float(p.v)
		if !ok {
			return jsonread.ErrType(p.name, "a number")
		}
		if !(x >= 0 && x <= p.max) {
			return sdk.BadInput(p.name + " must be " + p.rng)
		}
		*p.dst = &x
	}
	if f.stream != nil {
		b, ok := jsonread.Bool(f.stream)
		if !ok {
			return jsonread.ErrType("stream", "a boolean")
		}
		// The terminal event always carries usage.
		req.Stream, req.IncludeUsage = b, b
	}
	if f.metadata != nil {
		if err := checkMetadata(f.metadata); err != nil {
			return err
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

// checkMetadata validates metadata as OpenAI does (at most 16 string
// values, keys up to 64 and values up to 512 characters). The canonical
// request does not carry it: the host's keeper stores it with the
// response.
func checkMetadata(v *fastjson.Value) error {
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType("metadata", "an object of strings")
	}
	if o.Len() > 16 {
		return sdk.BadInput("metadata may have at most 16 keys")
	}
	var bad error
	o.Visit(func(k []byte, mv *fastjson.Value) {
		if bad != nil {
			return
		}
		if len(k) > 64 {
			bad = sdk.BadInput("metadata keys must be at most 64 characters")
			return
		}
		s, ok := jsonread.Str(mv)
		if !ok {
			bad = jsonread.ErrType("metadata."+string(k), "a string")
			return
		}
		if len(s) > 512 {
			bad = sdk.BadInput("metadata." + string(k) + " must be at most 512 characters")
		}
	})
	return bad
}
