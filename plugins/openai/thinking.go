package openai

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// decodeThinking normalizes the thinking switches clients use into
// req.Think. Every spelling present is validated; the first set one in this
// order wins: think (Ollama), thinking (Anthropic-style),
// chat_template_kwargs.enable_thinking (vLLM / SGLang), reasoning_effort
// (OpenAI). thinking.budget_tokens sets ThinkBudget unless thinking ends up
// off.
func decodeThinking(f *reqFields, req *canon.ChatRequest) error {
	var think, thinking, kwargs, effort canon.Think
	var err error
	if f.think != nil {
		if think, err = decodeThink(f.think); err != nil {
			return err
		}
	}
	if f.thinking != nil {
		if thinking, err = decodeThinkingObject(f.thinking, req); err != nil {
			return err
		}
	}
	if f.chatTemplateKwargs != nil {
		if kwargs, err = decodeTemplateKwargs(f.chatTemplateKwargs); err != nil {
			return err
		}
	}
	if f.reasoningEffort != nil {
		if effort, err = decodeEffort(f.reasoningEffort); err != nil {
			return err
		}
	}
	for _, t := range [...]canon.Think{think, thinking, kwargs, effort} {
		if t != canon.ThinkUnset {
			req.Think = t
			break
		}
	}
	if req.Think == canon.ThinkOff {
		req.ThinkBudget = 0
	}
	return nil
}

func onOff(b bool) canon.Think {
	if b {
		return canon.ThinkOn
	}
	return canon.ThinkOff
}

// decodeThink reads Ollama's think: a boolean or "low" | "medium" | "high".
func decodeThink(v *fastjson.Value) (canon.Think, error) {
	if b, ok := jsonread.Bool(v); ok {
		return onOff(b), nil
	}
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		switch string(b) {
		case "low":
			return canon.ThinkLow, nil
		case "medium":
			return canon.ThinkMedium, nil
		case "high":
			return canon.ThinkHigh, nil
		}
	}
	return "", jsonread.ErrType("think", `a boolean or one of "low", "medium", "high"`)
}

// decodeThinkingObject reads {"type": "enabled" | "adaptive" | "disabled",
// "budget_tokens": N}; a bare boolean is accepted too.
func decodeThinkingObject(v *fastjson.Value, req *canon.ChatRequest) (canon.Think, error) {
	if b, ok := jsonread.Bool(v); ok {
		return onOff(b), nil
	}
	o, err := v.Object()
	if err != nil {
		return "", jsonread.ErrType("thinking", "an object")
	}
	var t canon.Think
	if bv := o.Get("budget_tokens"); bv != nil && bv.Type() != fastjson.TypeNull {
		n, ok := jsonread.Int(bv)
		if !ok || n < 0 || n > jsonread.MaxInt32 {
			return "", jsonread.ErrType("thinking.budget_tokens", "a non-negative integer")
		}
		req.ThinkBudget = int(n)
		if n > 0 {
			t = canon.ThinkOn
		}
	}
	tv := o.Get("type")
	if tv == nil || tv.Type() == fastjson.TypeNull {
		return t, nil
	}
	if tv.Type() == fastjson.TypeString {
		b, _ := tv.StringBytes()
		switch string(b) {
		case "enabled", "adaptive":
			return canon.ThinkOn, nil
		case "disabled":
			return canon.ThinkOff, nil
		}
	}
	return "", jsonread.ErrType("thinking.type", `one of "enabled", "adaptive", "disabled"`)
}

// decodeTemplateKwargs reads chat_template_kwargs.enable_thinking (Qwen3 and
// most templates) or, failing that, chat_template_kwargs.thinking (DeepSeek
// V3.1 templates). Other kwargs are not carried in the canonical request.
func decodeTemplateKwargs(v *fastjson.Value) (canon.Think, error) {
	o, err := v.Object()
	if err != nil {
		return "", jsonread.ErrType("chat_template_kwargs", "an object")
	}
	for _, k := range [...]string{"enable_thinking", "thinking"} {
		kv := o.Get(k)
		if kv == nil || kv.Type() == fastjson.TypeNull {
			continue
		}
		b, ok := jsonread.Bool(kv)
		if !ok {
			return "", jsonread.ErrType("chat_template_kwargs."+k, "a boolean")
		}
		return onOff(b), nil
	}
	return canon.ThinkUnset, nil
}

// decodeEffort maps OpenAI's reasoning_effort.
func decodeEffort(v *fastjson.Value) (canon.Think, error) {
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		switch string(b) {
		case "none":
			return canon.ThinkOff, nil
		case "minimal", "low":
			return canon.ThinkLow, nil
		case "medium":
			return canon.ThinkMedium, nil
		case "high", "xhigh":
			return canon.ThinkHigh, nil
		}
		return "", sdk.BadInput(`reasoning_effort "` + string(b) + `" is not supported (use none, minimal, low, medium, high or xhigh)`)
	}
	return "", jsonread.ErrType("reasoning_effort", "a string")
}
