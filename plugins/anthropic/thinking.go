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
	case "adaptive":
		req.Think = canon.ThinkOn
	case "disabled":
		req.Think = canon.ThinkOff
	default:
		return sdk.BadInput(`thinking.type "` + typ + `" is not supported (use enabled, adaptive or disabled)`)
	}
	return nil
}
