package anthropic

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// reqFields holds the top-level request fields this translator reads, as
// found in one pass over the body (nil: absent or null). Anything else
// (service_tier, container, mcp_servers, cache_control, ...) is ignored.
type reqFields struct {
	model, messages, system, maxTokens, metadata, stopSequences, stream *fastjson.Value
	temperature, topP, topK                                             *fastjson.Value
	tools, toolChoice, thinking, outputConfig                           *fastjson.Value
}

func (f *reqFields) set(k []byte, v *fastjson.Value) {
	switch string(k) {
	case "model":
		f.model = v
	case "messages":
		f.messages = v
	case "system":
		f.system = v
	case "max_tokens":
		f.maxTokens = v
	case "metadata":
		f.metadata = v
	case "stop_sequences":
		f.stopSequences = v
	case "stream":
		f.stream = v
	case "temperature":
		f.temperature = v
	case "top_p":
		f.topP = v
	case "top_k":
		f.topK = v
	case "tools":
		f.tools = v
	case "tool_choice":
		f.toolChoice = v
	case "thinking":
		f.thinking = v
	case "output_config":
		f.outputConfig = v
	}
}

// DecodeRequest parses a Messages API request body into req
// (https://docs.claude.com/en/api/messages).
func (t *Translator) DecodeRequest(c *sdk.Call, body []byte, req *canon.ChatRequest) error {
	route, _ := c.MetaBytes(abi.MetaRoute)
	count := string(route) == RouteCountTokens || string(route) == RouteCountTokensPrefixed
	if len(route) > 0 && string(route) != RouteMessages && string(route) != RouteMessagesPrefixed && !count {
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
	// Anthropic requires max_tokens; so does this translator, with
	// Anthropic's 400, so a client tested here behaves the same there.
	// count_tokens takes the same body without it.
	switch {
	case f.maxTokens == nil && count:
	case f.maxTokens == nil:
		return jsonread.ErrRequired("max_tokens")
	default:
		n, ok := jsonread.Int(f.maxTokens)
		if !ok {
			return jsonread.ErrType("max_tokens", "an integer")
		}
		if n < 1 || n > jsonread.MaxInt32 {
			return sdk.BadInput("max_tokens must be between 1 and 2147483647")
		}
		req.MaxTokens = int(n)
	}
	if err := decodeSystem(f.system, req); err != nil {
		return err
	}
	if err := decodeMessages(f.messages, req); err != nil {
		return err
	}
	if err := decodeSampling(&f, req); err != nil {
		return err
	}
	if err := decodeTools(&f, req); err != nil {
		return err
	}
	if err := decodeThinking(f.thinking, req); err != nil {
		return err
	}
	return decodeOutputConfig(f.outputConfig, req)
}

// decodeSampling reads stream, temperature, top_p, top_k, stop_sequences
// and metadata.user_id, with the Messages API's ranges.
func decodeSampling(f *reqFields, req *canon.ChatRequest) error {
	var ok bool
	if f.stream != nil {
		if req.Stream, ok = jsonread.Bool(f.stream); !ok {
			return jsonread.ErrType("stream", "a boolean")
		}
	}
	for _, p := range [...]struct {
		v    *fastjson.Value
		name string
		dst  **float64
	}{{f.temperature, "temperature", &req.Temperature}, {f.topP, "top_p", &req.TopP}} {
		if p.v == nil {
			continue
		}
		x, ok := jsonread.Float(p.v)
		if !ok {
			return jsonread.ErrType(p.name, "a number")
		}
		if !(x >= 0 && x <= 1) {
			return sdk.BadInput(p.name + " must be between 0 and 1")
		}
		*p.dst = &x
	}
	if f.topK != nil {
		n, ok := jsonread.Int(f.topK)
		if !ok || n < 0 || n > jsonread.MaxInt32 {
			return jsonread.ErrType("top_k", "a non-negative integer")
		}
		k := int(n)
		req.TopK = &k
	}
	if f.stopSequences != nil {
		arr, err := f.stopSequences.Array()
		if err != nil {
			return jsonread.ErrType("stop_sequences", "an array of strings")
		}
		for i, e := range arr {
			s, ok := jsonread.Str(e)
			if !ok {
				return jsonread.ErrType(jsonread.At("stop_sequences", i), "a string")
			}
			if s != "" {
				req.Stop = append(req.Stop, s)
			}
		}
	}
	if f.metadata != nil {
		o, err := f.metadata.Object()
		if err != nil {
			return jsonread.ErrType("metadata", "an object")
		}
		if u := o.Get("user_id"); u != nil && u.Type() != fastjson.TypeNull {
			s, ok := jsonread.Str(u)
			if !ok {
				return jsonread.ErrType("metadata.user_id", "a string")
			}
			req.User = s
		}
	}
	return nil
}

// decodeOutputConfig reads output_config.format ({"type": "json_schema",
// "schema": {...}}), the Messages API's structured outputs. Other
// output_config fields (effort) are not carried.
func decodeOutputConfig(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return nil
	}
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType("output_config", "an object")
	}
	fv := o.Get("format")
	if fv == nil || fv.Type() == fastjson.TypeNull {
		return nil
	}
	fo, err := fv.Object()
	if err != nil {
		return jsonread.ErrType("output_config.format", "an object")
	}
	tv := fo.Get("type")
	if tv == nil || tv.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired("output_config.format.type")
	}
	if !jsonread.IsStr(tv, "json_schema") {
		return jsonread.ErrType("output_config.format.type", `"json_schema"`)
	}
	rf := &canon.ResponseFormat{Type: canon.FormatJSONSchema}
	sv := fo.Get("schema")
	if sv == nil || sv.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired("output_config.format.schema")
	}
	if sv.Type() != fastjson.TypeObject {
		return jsonread.ErrType("output_config.format.schema", "an object")
	}
	rf.Schema = sv.MarshalTo(nil)
	if nv := fo.Get("name"); nv != nil && nv.Type() != fastjson.TypeNull {
		var ok bool
		if rf.Name, ok = jsonread.Str(nv); !ok {
			return jsonread.ErrType("output_config.format.name", "a string")
		}
	}
	req.ResponseFormat = rf
	return nil
}
