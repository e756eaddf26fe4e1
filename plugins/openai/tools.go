package openai

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
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
		b, ok := getBool(f.parallelToolCalls)
		if !ok {
			return errType("parallel_tool_calls", "a boolean")
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
		return errType(name, "an array")
	}
	if len(arr) == 0 {
		return nil
	}
	req.Tools = make([]canon.Tool, len(arr))
	for i, tv := range arr {
		path := at(name, i)
		o, err := tv.Object()
		if err != nil {
			return errType(path, "an object")
		}
		fn := o
		if wrapped {
			if typ := o.Get("type"); typ != nil && typ.Type() != fastjson.TypeNull && !isStr(typ, "function") {
				s, ok := getStr(typ)
				if !ok {
					return errType(path+".type", "a string")
				}
				return sdk.BadInput(path + ".type: tool type " + s + " is not supported")
			}
			path += ".function"
			fv := o.Get("function")
			if fv == nil || fv.Type() == fastjson.TypeNull {
				return errRequired(path)
			}
			if fn, err = fv.Object(); err != nil {
				return errType(path, "an object")
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
		return errRequired(path + ".name")
	}
	s, ok := getStr(nv)
	if !ok {
		return errType(path+".name", "a string")
	}
	if s == "" {
		return errRequired(path + ".name")
	}
	t.Name = s
	if d := o.Get("description"); d != nil && d.Type() != fastjson.TypeNull {
		if t.Description, ok = getStr(d); !ok {
			return errType(path+".description", "a string")
		}
	}
	if p := o.Get("parameters"); p != nil && p.Type() != fastjson.TypeNull {
		if p.Type() != fastjson.TypeObject {
			return errType(path+".parameters", "an object")
		}
		t.Parameters = p.MarshalTo(nil)
	}
	if st := o.Get("strict"); st != nil && st.Type() != fastjson.TypeNull {
		if t.Strict, ok = getBool(st); !ok {
			return errType(path+".strict", "a boolean")
		}
	}
	return nil
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
		return nil, errType(name, "a string or an object")
	}
	fn := o
	if typ := o.Get("type"); typ != nil && typ.Type() != fastjson.TypeNull {
		if !isStr(typ, "function") {
			s, ok := getStr(typ)
			if !ok {
				return nil, errType(name+".type", "a string")
			}
			return nil, sdk.BadInput(name + ".type: tool choice type " + s + " is not supported")
		}
		// {"type": "function", "function": {"name"}}; the Responses API's
		// flat {"type": "function", "name"} is accepted too.
		if fv := o.Get("function"); fv != nil && fv.Type() != fastjson.TypeNull {
			if fn, err = fv.Object(); err != nil {
				return nil, errType(name+".function", "an object")
			}
			name += ".function"
		}
	}
	nv := fn.Get("name")
	if nv == nil || nv.Type() == fastjson.TypeNull {
		return nil, errRequired(name + ".name")
	}
	s, ok := getStr(nv)
	if !ok || s == "" {
		return nil, errType(name+".name", "a non-empty string")
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
		return errType("response_format", "an object")
	}
	tv := o.Get("type")
	if tv == nil || tv.Type() == fastjson.TypeNull {
		return errRequired("response_format.type")
	}
	typ, ok := getStr(tv)
	if !ok {
		return errType("response_format.type", "a string")
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
		return errRequired(path)
	}
	o, err := v.Object()
	if err != nil {
		return errType(path, "an object")
	}
	var ok bool
	if n := o.Get("name"); n != nil && n.Type() != fastjson.TypeNull {
		if rf.Name, ok = getStr(n); !ok {
			return errType(path+".name", "a string")
		}
	}
	if s := o.Get("schema"); s != nil && s.Type() != fastjson.TypeNull {
		if s.Type() != fastjson.TypeObject && s.Type() != fastjson.TypeTrue && s.Type() != fastjson.TypeFalse {
			return errType(path+".schema", "an object")
		}
		rf.Schema = s.MarshalTo(nil)
	}
	if st := o.Get("strict"); st != nil && st.Type() != fastjson.TypeNull {
		if rf.Strict, ok = getBool(st); !ok {
			return errType(path+".strict", "a boolean")
		}
	}
	return nil
}
