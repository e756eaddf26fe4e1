package anthropic

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// decodeThinking reads {"type": "enabled", "budget_tokens": N} (on, with
// a budget), {"type": "adaptive"} (on: the model decides how much, which
// open-weights reasoning models do anyway) and {"type": "disabled"} (off).
// "display" (Claude Code sends "omitted") is not read: thinking the model
// does is returned as thinking blocks.
//
// Enabled and adaptive thinking are optional (canon ThinkOptional): for a
// model known not to think (its Ollama capabilities lack "thinking") the
// request goes to the backend without it and the answer has no thinking
// block, instead of the backend's 400 "does not support thinking". Ollama's
// own Anthropic API relaxes thinking the same way, for Claude Code. What
// the Messages API itself refuses (a missing or non-positive
// budget_tokens, an unknown type) is still a 400.
func decodeThinking(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return nil
	}
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType("thinking", "an object")
	}
	typ, err := blockType(o, "thinking")
	if err != nil {
		return err
	}
	switch typ {
	case "enabled":
		req.Think = canon.ThinkOn
		bv := o.Get("budget_tokens")
		if bv == nil || bv.Type() == fastjson.TypeNull {
			return jsonread.ErrRequired("thinking.budget_tokens")
		}
		n, ok := jsonread.Int(bv)
		if !ok || n < 1 || n > jsonread.MaxInt32 {
			return jsonread.ErrType("thinking.budget_tokens", "a positive integer")
		}
		req.ThinkBudget = int(n)
		req.ThinkOptional = true
	case "adaptive":
		req.Think = canon.ThinkOn
		req.ThinkOptional = true
	case "disabled":
		req.Think = canon.ThinkOff
	default:
		return sdk.BadInput(`thinking.type "` + typ + `" is not supported (use enabled, adaptive or disabled)`)
	}
	return nil
}
