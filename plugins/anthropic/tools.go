package anthropic

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// decodeTools reads tools and tool_choice.
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
		return decodeToolChoice(f.toolChoice, req)
	}
	return nil
}

// decodeTool reads a client tool {"name", "description", "input_schema",
// "strict"}; Anthropic's server and versioned tools (web_search_*,
// bash_*, ...) run on Anthropic's side and are refused.
func decodeTool(v *fastjson.Value, path string, t *canon.Tool) error {
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType(path, "an object")
	}
	if tv := o.Get("type"); tv != nil && tv.Type() != fastjson.TypeNull && !jsonread.IsStr(tv, "custom") {
		s, ok := jsonread.Str(tv)
		if !ok {
			return jsonread.ErrType(path+".type", "a string")
		}
		return sdk.BadInput(path + ".type: tool type " + s + " is not supported (only client tools)")
	}
	if t.Name, err = strField(o, "name", path); err != nil {
		return err
	}
	return jsonread.ToolFields(o, path, "input_schema", t)
}

// decodeToolChoice reads {"type": "auto" | "any" | "tool" | "none", "name",
// "disable_parallel_tool_use"}: any is OpenAI's required, tool a named
// function.
func decodeToolChoice(v *fastjson.Value, req *canon.ChatRequest) error {
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType("tool_choice", "an object")
	}
	typ, err := blockType(o, "tool_choice")
	if err != nil {
		return err
	}
	tc := &canon.ToolChoice{}
	switch typ {
	case "auto":
		tc.Mode = canon.ToolChoiceAuto
	case "any":
		tc.Mode = canon.ToolChoiceRequired
	case "none":
		tc.Mode = canon.ToolChoiceNone
	case "tool":
		tc.Mode = canon.ToolChoiceFunction
		if tc.Name, err = strField(o, "name", "tool_choice"); err != nil {
			return err
		}
	default:
		return sdk.BadInput(`tool_choice.type "` + typ + `" is not supported (use auto, any, tool or none)`)
	}
	if dv := o.Get("disable_parallel_tool_use"); dv != nil && dv.Type() != fastjson.TypeNull {
		b, ok := jsonread.Bool(dv)
		if !ok {
			return jsonread.ErrType("tool_choice.disable_parallel_tool_use", "a boolean")
		}
		if b {
			par := false
			req.ParallelToolCalls = &par
		}
	}
	req.ToolChoice = tc
	return nil
}
