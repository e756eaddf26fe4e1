package ollamaapi

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// decodeTools reads tools: [{"type": "function", "function": {"name",
// "description", "parameters"}}], OpenAI's shape, which Ollama copied.
// Ollama has no tool_choice: the model decides.
func decodeTools(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return nil
	}
	arr, err := v.Array()
	if err != nil {
		return jsonread.ErrType("tools", "an array")
	}
	if len(arr) == 0 {
		return nil
	}
	req.Tools = make([]canon.Tool, len(arr))
	for i, tv := range arr {
		path := jsonread.At("tools", i)
		o, err := tv.Object()
		if err != nil {
			return jsonread.ErrType(path, "an object")
		}
		if typ := o.Get("type"); typ != nil && typ.Type() != fastjson.TypeNull {
			s, ok := jsonread.Str(typ)
			if !ok {
				return jsonread.ErrType(path+".type", "a string")
			}
			if s != "function" && s != "" {
				return sdk.BadInput(path + ".type: tool type " + s + " is not supported")
			}
		}
		path += ".function"
		fv := o.Get("function")
		if fv == nil || fv.Type() == fastjson.TypeNull {
			return jsonread.ErrRequired(path)
		}
		fn, err := fv.Object()
		if err != nil {
			return jsonread.ErrType(path, "an object")
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
	if d := o.Get("description"); d != nil && d.Type() != fastjson.TypeNull {
		if t.Description, ok = jsonread.Str(d); !ok {
			return jsonread.ErrType(path+".description", "a string")
		}
	}
	if p := o.Get("parameters"); p != nil && p.Type() != fastjson.TypeNull {
		if p.Type() != fastjson.TypeObject {
			return jsonread.ErrType(path+".parameters", "an object")
		}
		t.Parameters = appendCompact(nil, p)
	}
	return nil
}
