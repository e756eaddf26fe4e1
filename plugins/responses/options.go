package responses

import (
	"strings"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// decodeTools reads tools, tool_choice and parallel_tool_calls into req,
// and what the answer needs of them into tl. Function tools are flat in
// this API: {"type":"function","name","description","parameters",
// "strict"}. A namespace ({"type":"namespace","name","tools":[function
// tools]}, Codex's grouping) is flattened: each of its tools is offered
// as "<namespace>__<name>" (Codex's own flat spelling), and the calls the
// model makes are named back (namespace and name) in the answer. Hosted
// tools run on OpenAI's side, which no backend here has: they are not
// offered to the model, and the host names them in the answer's
// X-MindRouter-Dropped-Tools header; another type is refused.
func decodeTools(f *reqFields, req *canon.ChatRequest, tl *toolList) error {
	if f.tools != nil {
		arr, err := f.tools.Array()
		if err != nil {
			return jsonread.ErrType("tools", "an array")
		}
		if len(arr) > 0 {
			req.Tools = make([]canon.Tool, 0, len(arr))
		}
		for i, tv := range arr {
			if err := tl.tool(tv, jsonread.At("tools", i), req); err != nil {
				return err
			}
		}
		if len(req.Tools) == 0 {
			req.Tools = nil
		}
	}
	if f.toolChoice != nil {
		tc, err := decodeToolChoice(f.toolChoice, tl)
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

// toolList is what decodeTools learnt for the answer: the flattened
// namespaced tools and the hosted tools dropped.
type toolList struct {
	names   []nsName
	dropped []string
}

// nsName is a namespaced tool as the model sees it (flat) and as the
// client named it.
type nsName struct{ flat, namespace, name string }

// hostedTools are the tool types OpenAI runs (or asks the client to run
// through an item type of its own) that the gateway does not offer the
// model.
var hostedTools = map[string]bool{
	"web_search": true, "web_search_preview": true, "web_search_preview_2025_03_11": true,
	"web_search_2025_08_26": true, "file_search": true, "code_interpreter": true,
	"computer_use_preview": true, "computer_use": true, "computer": true, "image_generation": true,
	"mcp": true, "local_shell": true, "shell": true, "apply_patch": true, "tool_search": true,
	"custom": true,
}

// flatName is Codex's flat spelling of a namespaced tool: the namespace's
// trailing and the name's leading underscores trimmed around "__".
func flatName(namespace, name string) string {
	return strings.TrimRight(namespace, "_") + "__" + strings.TrimLeft(name, "_")
}

// tool reads one tools entry at path into req.Tools.
func (tl *toolList) tool(v *fastjson.Value, path string, req *canon.ChatRequest) error {
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType(path, "an object")
	}
	typ, err := reqString(o, path, "type")
	if err != nil {
		return err
	}
	switch {
	case typ == "function":
		var t canon.Tool
		if err := decodeFunction(o, path, &t); err != nil {
			return err
		}
		req.Tools = append(req.Tools, t)
		return nil
	case typ == "namespace":
		return tl.namespace(o, path, req)
	case hostedTools[typ]:
		name := typ
		if nv := o.Get("name"); nv != nil && (typ == "custom" || typ == "mcp") {
			if n, ok := jsonread.Str(nv); ok && n != "" {
				name = typ + ":" + n
			}
		}
		tl.dropped = append(tl.dropped, name)
		return nil
	}
	return sdk.BadInput(path + ".type: tool type " + typ + " is not supported on this gateway (function and namespace tools are offered to the model, hosted tools are dropped)")
}

// namespace flattens {"type":"namespace","name","description","tools"}.
func (tl *toolList) namespace(o *fastjson.Object, path string, req *canon.ChatRequest) error {
	ns, err := reqString(o, path, "name")
	if err != nil {
		return err
	}
	if ns == "" {
		return jsonread.ErrRequired(path + ".name")
	}
	tv := o.Get("tools")
	if tv == nil || tv.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired(path + ".tools")
	}
	arr, err := tv.Array()
	if err != nil {
		return jsonread.ErrType(path+".tools", "an array")
	}
	for j, fv := range arr {
		fp := jsonread.At(path+".tools", j)
		fo, err := fv.Object()
		if err != nil {
			return jsonread.ErrType(fp, "an object")
		}
		typ, err := reqString(fo, fp, "type")
		if err != nil {
			return err
		}
		if typ != "function" {
			if hostedTools[typ] {
				tl.dropped = append(tl.dropped, ns+"."+typ)
				continue
			}
			return sdk.BadInput(fp + ".type: tool type " + typ + " is not supported in a namespace on this gateway (only function)")
		}
		var t canon.Tool
		if err := decodeFunction(fo, fp, &t); err != nil {
			return err
		}
		name := t.Name
		t.Name = flatName(ns, name)
		tl.names = append(tl.names, nsName{flat: t.Name, namespace: ns, name: name})
		req.Tools = append(req.Tools, t)
	}
	return nil
}

// decodeFunction reads a function tool's name and fields.
func decodeFunction(o *fastjson.Object, path string, t *canon.Tool) error {
	var err error
	if t.Name, err = reqString(o, path, "name"); err != nil {
		return err
	}
	if t.Name == "" {
		return jsonread.ErrRequired(path + ".name")
	}
	return jsonread.ToolFields(o, path, "parameters", t)
}

// unflat returns the namespace and name a flattened tool name stands
// for; a name no namespace gave is returned as it is, with no namespace.
func (tl *toolList) unflat(flat string) (namespace, name string) {
	for i := range tl.names {
		if tl.names[i].flat == flat {
			return tl.names[i].namespace, tl.names[i].name
		}
	}
	return "", flat
}

// decodeToolChoice reads "auto" | "none" | "required",
// {"type":"function","name"[,"namespace"]} or a hosted tool's choice
// ({"type":"web_search"}: that tool is not offered, so the model
// chooses, auto).
func decodeToolChoice(v *fastjson.Value, tl *toolList) (*canon.ToolChoice, error) {
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
	if hostedTools[typ] {
		return &canon.ToolChoice{Mode: canon.ToolChoiceAuto}, nil
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
	if nv := o.Get("namespace"); nv != nil {
		if ns, ok := jsonread.Str(nv); ok && ns != "" {
			name = flatName(ns, name)
		}
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
