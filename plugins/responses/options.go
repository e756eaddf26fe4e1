package responses

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// decodeTools reads tools (function tools only: the hosted tools run on
// OpenAI's side, which no backend here has), tool_choice and
// parallel_tool_calls. Function tools are flat in this API:
// {"type":"function","name","description","parameters","strict"}.
func decodeTools(f *reqFields, req *canon.ChatRequest) error {
	if f.tools != nil {
		arr, err := f.tools.Array()
		if err != nil {
			return jsonread.ErrType("tools", "an array")
		}
		if len(arr) > 0 {
			req.Tools = make([]canon.Tool, len(arr))
		}
		for i, tv := range arr {
			if err := decodeTool(tv, jsonread.At("tools", i), &req.Tools[i]); err != nil {
				return err
			}
		}
	}
	if f.toolChoice != nil {
		tc, err := decodeToolChoice(f.toolChoice)
		if err != nil {
			return err
		}
		req.ToolChoice = tc
	}
	if f.parallelToolCalls != nil {
		b, ok := jsonread.Bool(f.parallelToolCalls)
		if !ok {
			return jsonread.ErrType("parallel_tool_calls", "a boolean")
		}
		req.ParallelToolCalls = &b
	}
	return nil
}

func decodeTool(v *fastjson.Value, path string, t *canon.Tool) error {
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType(path, "an object")
	}
	typ, err := reqString(o, path, "type")
	if err != nil {
		return err
	}
	if typ != "function" {
		return sdk.BadInput(path + ".type: tool type " + typ + " is not supported on this gateway (only function tools are)")
	}
	if t.Name, err = reqString(o, path, "name"); err != nil {
		return err
	}
	if t.Name == "" {
		return jsonread.ErrRequired(path + ".name")
	}
	return jsonread.ToolFields(o, path, "parameters", t)
}

// decodeToolChoice reads "auto" | "none" | "required" or
// {"type":"function","name"}.
func decodeToolChoice(v *fastjson.Value) (*canon.ToolChoice, error) {
	if s, ok := jsonread.Str(v); ok {
		switch s {
		case "auto":
			return &canon.ToolChoice{Mode: canon.ToolChoiceAuto}, nil
		case "none":
			return &canon.ToolChoice{Mode: canon.ToolChoiceNone}, nil
		case "required":
			return &canon.ToolChoice{Mode: canon.ToolChoiceRequired}, nil
		}
		return nil, sdk.BadInput(`tool_choice "` + s + `" is not supported (use auto, none, required or {"type":"function","name":...})`)
	}
	o, err := v.Object()
	if err != nil {
		return nil, jsonread.ErrType("tool_choice", "a string or an object")
	}
	typ, err := reqString(o, "tool_choice", "type")
	if err != nil {
		return nil, err
	}
	if typ != "function" {
		return nil, sdk.BadInput("tool_choice.type: tool choice type " + typ + " is not supported on this gateway (only function)")
	}
	name, err := reqString(o, "tool_choice", "name")
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, jsonread.ErrRequired("tool_choice.name")
	}
	return &canon.ToolChoice{Mode: canon.ToolChoiceFunction, Name: name}, nil
}

// decodeTextFormat reads text.format: {"type":"text"}, {"type":
// "json_object"} or {"type":"json_schema","name","schema","strict"}
// (flat, unlike Chat Completions' response_format.json_schema).
// text.verbosity has no canonical counterpart and is ignored.
func decodeTextFormat(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return nil
	}
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType("text", "an object")
	}
	fv := o.Get("format")
	if fv == nil || fv.Type() == fastjson.TypeNull {
		return nil
	}
	fo, err := fv.Object()
	if err != nil {
		return jsonread.ErrType("text.format", "an object")
	}
	typ, err := reqString(fo, "text.format", "type")
	if err != nil {
		return err
	}
	rf := &canon.ResponseFormat{Type: canon.FormatType(typ)}
	switch rf.Type {
	case canon.FormatText, canon.FormatJSONObject:
	case canon.FormatJSONSchema:
		if rf.Name, err = reqString(fo, "text.format", "name"); err != nil {
			return err
		}
		s := fo.Get("schema")
		if s == nil || s.Type() == fastjson.TypeNull {
			return jsonread.ErrRequired("text.format.schema")
		}
		if s.Type() != fastjson.TypeObject {
			return jsonread.ErrType("text.format.schema", "an object")
		}
		rf.Schema = s.MarshalTo(nil)
		if st := fo.Get("strict"); st != nil && st.Type() != fastjson.TypeNull {
			var ok bool
			if rf.Strict, ok = jsonread.Bool(st); !ok {
				return jsonread.ErrType("text.format.strict", "a boolean")
			}
		}
	default:
		return sdk.BadInput("text.format.type " + typ + " is not supported (use text, json_object or json_schema)")
	}
	req.ResponseFormat = rf
	return nil
}

// decodeReasoning reads reasoning.effort (none, minimal, low, medium,
// high, xhigh). reasoning.summary asks OpenAI for a summary of its hidden
// reasoning; the engines here show the reasoning itself, so it is ignored.
func decodeReasoning(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return nil
	}
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType("reasoning", "an object")
	}
	ev := o.Get("effort")
	if ev == nil || ev.Type() == fastjson.TypeNull {
		return nil
	}
	s, ok := jsonread.Str(ev)
	if !ok {
		return jsonread.ErrType("reasoning.effort", "a string")
	}
	switch s {
	case "none":
		req.Think = canon.ThinkOff
	case "minimal", "low":
		req.Think = canon.ThinkLow
	case "medium":
		req.Think = canon.ThinkMedium
	case "high", "xhigh":
		req.Think = canon.ThinkHigh
	default:
		return sdk.BadInput(`reasoning.effort "` + s + `" is not supported (use none, minimal, low, medium, high or xhigh)`)
	}
	return nil
}
