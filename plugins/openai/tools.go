package openai

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// decodeTools reads tools, tool_choice and parallel_tool_calls, falling back
// to the legacy functions / function_call pair when the new fields are
// absent.
func decodeTools(f *reqFields, req *canon.ChatRequest) error {
	switch {
	case f.tools != nil:
		if err := decodeToolList(f.tools, "tools", true, req); err != nil {
			return err
		}
	case f.functions != nil:
		if err := decodeToolList(f.functions, "functions", false, req); err != nil {
			return err
		}
	}
	switch {
	case f.toolChoice != nil:
		tc, err := decodeToolChoice(f.toolChoice, "tool_choice")
		if err != nil {
			return err
		}
		req.ToolChoice = tc
	case f.functionCall != nil:
		tc, err := decodeToolChoice(f.functionCall, "function_call")
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

// decodeToolList reads tools ([{"type": "function", "function": {...}}]) or,
// when wrapped is false, legacy functions ([{...}]).
func decodeToolList(v *fastjson.Value, name string, wrapped bool, req *canon.ChatRequest) error {
	arr, err := v.Array()
	if err != nil {
		return jsonread.ErrType(name, "an array")
	}
	if len(arr) == 0 {
		return nil
	}
	req.Tools = make([]canon.Tool, len(arr))
	for i, tv := range arr {
		path := jsonread.At(name, i)
		o, err := tv.Object()
		if err != nil {
			return jsonread.ErrType(path, "an object")
		}
		fn := o
		if wrapped {
			if typ := o.Get("type"); typ != nil && typ.Type() != fastjson.TypeNull && !jsonread.IsStr(typ, "function") {
				s, ok := jsonread.Str(typ)
				if !ok {
					return jsonread.ErrType(path+".type", "a string")
				}
				return sdk.BadInput(path + ".type: tool type " + s + " is not supported")
			}
			path += ".function"
			fv := o.Get("function")
			if fv == nil || fv.Type() == fastjson.TypeNull {
				return jsonread.ErrRequired(path)
			}
			if fn, err = fv.Object(); err != nil {
				return jsonread.ErrType(path, "an object")
			}
		}
		if err := decodeToolDef(fn, path, &req.Tools[i]); err != nil {
			return err
		}
	}
	return nil
}

func decodeToolDef(o *fastjson.Object, path string, t *canon.Tool) error {
	nv := o.Get("name")
	if nv == nil || nv.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired(path + ".name")
	}
	s, ok := jsonread.Str(nv)
	if !ok {
		return jsonread.ErrType(path+".name", "a string")
	}
	if s == "" {
		return jsonread.ErrRequired(path + ".name")
	}
	t.Name = s
	return jsonread.ToolFields(o, path, "parameters", t)
}

// decodeToolChoice reads "auto" | "none" | "required" or
// {"type": "function", "function": {"name": ...}}; for the legacy
// function_call, {"name": ...}.
func decodeToolChoice(v *fastjson.Value, name string) (*canon.ToolChoice, error) {
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		switch string(b) {
		case "auto":
			return &canon.ToolChoice{Mode: canon.ToolChoiceAuto}, nil
		case "none":
			return &canon.ToolChoice{Mode: canon.ToolChoiceNone}, nil
		case "required":
			return &canon.ToolChoice{Mode: canon.ToolChoiceRequired}, nil
		}
		return nil, sdk.BadInput(name + ` "` + string(b) + `" is not supported (use auto, none, required or a function)`)
	}
	o, err := v.Object()
	if err != nil {
		return nil, jsonread.ErrType(name, "a string or an object")
	}
	fn := o
	if typ := o.Get("type"); typ != nil && typ.Type() != fastjson.TypeNull {
		if !jsonread.IsStr(typ, "function") {
			s, ok := jsonread.Str(typ)
			if !ok {
				return nil, jsonread.ErrType(name+".type", "a string")
			}
			return nil, sdk.BadInput(name + ".type: tool choice type " + s + " is not supported")
		}
		// {"type": "function", "function": {"name"}}; the Responses API's
		// flat {"type": "function", "name"} is accepted too.
		if fv := o.Get("function"); fv != nil && fv.Type() != fastjson.TypeNull {
			if fn, err = fv.Object(); err != nil {
				return nil, jsonread.ErrType(name+".function", "an object")
			}
			name += ".function"
		}
	}
	nv := fn.Get("name")
	if nv == nil || nv.Type() == fastjson.TypeNull {
		return nil, jsonread.ErrRequired(name + ".name")
	}
	s, ok := jsonread.Str(nv)
	if !ok || s == "" {
		return nil, jsonread.ErrType(name+".name", "a non-empty string")
	}
	return &canon.ToolChoice{Mode: canon.ToolChoiceFunction, Name: s}, nil
}

// decodeResponseFormat reads {"type": "text" | "json_object" | "json_schema",
// "json_schema": {"name", "schema", "strict"}}.
func decodeResponseFormat(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return nil
	}
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType("response_format", "an object")
	}
	tv := o.Get("type")
	if tv == nil || tv.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired("response_format.type")
	}
	typ, ok := jsonread.Str(tv)
	if !ok {
		return jsonread.ErrType("response_format.type", "a string")
	}
	rf := &canon.ResponseFormat{Type: canon.FormatType(typ)}
	switch rf.Type {
	case canon.FormatText, canon.FormatJSONObject:
	case canon.FormatJSONSchema:
		if err := decodeJSONSchema(o.Get("json_schema"), rf); err != nil {
			return err
		}
	default:
		return sdk.BadInput("response_format.type " + typ + " is not supported")
	}
	req.ResponseFormat = rf
	return nil
}

func decodeJSONSchema(v *fastjson.Value, rf *canon.ResponseFormat) error {
	const path = "response_format.json_schema"
	if v == nil || v.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired(path)
	}
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType(path, "an object")
	}
	var ok bool
	if n := o.Get("name"); n != nil && n.Type() != fastjson.TypeNull {
		if rf.Name, ok = jsonread.Str(n); !ok {
			return jsonread.ErrType(path+".name", "a string")
		}
	}
	if s := o.Get("schema"); s != nil && s.Type() != fastjson.TypeNull {
		if s.Type() != fastjson.TypeObject && s.Type() != fastjson.TypeTrue && s.Type() != fastjson.TypeFalse {
			return jsonread.ErrType(path+".schema", "an object")
		}
		rf.Schema = s.MarshalTo(nil)
	}
	if st := o.Get("strict"); st != nil && st.Type() != fastjson.TypeNull {
		if rf.Strict, ok = jsonread.Bool(st); !ok {
			return jsonread.ErrType(path+".strict", "a boolean")
		}
	}
	return nil
}
