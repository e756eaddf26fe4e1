package server

import (
	"errors"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/tokens"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Context capping. A request whose input and requested output come near
// the model's context window on the chosen backend is counted: an input
// that does not fit is a 400 in the client's dialect before the backend
// is asked to generate, and the output is capped to what fits, so it does
// not refuse max_tokens or stop mid-way for lack of room. Far from the
// limit (the common case) nothing is counted: the quick byte estimate
// decides, at no cost.
//
// On a vLLM backend the count is the backend's own (vllmcount.go: its
// /tokenize, memoised), with the chat template applied: exact, so the
// margin is ctxExactMarginTokens only, against a BOS or similar special
// token that some vLLM versions add on one path and not the other. On
// Ollama (no tokenize API), or when /tokenize fails, the gateway's
// generic tokenizer counts (core/tokens: tiktoken cl100k, offline); it is
// not the model's, so the margin absorbs the difference (ctxMarginPct of
// the input, plus ctxMarginTokens for the chat template).
const (
	ctxMarginPct         = 10
	ctxMarginTokens      = 16
	ctxExactMarginTokens = 4
	// nearFraction: an estimate above this share of the window is counted.
	nearNum, nearDen = 3, 4
)

// contextCap returns the output cap for a request on backend b, whose
// model has a context window of ctxLen tokens (0: unknown), or 0 for no
// cap; counting needs the canonical request (canonical).
func (ex *exchange) contextCap(b *backend.Backend, ctxLen int) (int, error) {
	if ctxLen <= 0 || ex.route.kind != sdk.EndpointChat {
		return 0, nil
	}
	est := ex.estIn
	if est == 0 {
		est = inputEstimate(ex.body)
		ex.estIn = est
	}
	want := int64(ex.req.MaxTokens)
	if (est+max(want, 0))*nearDen < int64(ctxLen)*nearNum {
		return 0, nil
	}
	if err := ex.canonical(); err != nil {
		return 0, err
	}
	var n, room int
	if v, ok := ex.exactCount(b, ctxLen); ok {
		if v.maxLen > 0 {
			ctxLen = min(ctxLen, v.maxLen) // the engine's own limit, if discovery's is stale
		}
		n, room = v.count, ctxLen-v.count-ctxExactMarginTokens
	} else {
		var req canon.ChatRequest
		if err := req.DecodeJSON(ex.canon); err != nil {
			return 0, pluginFailure(err)
		}
		c, err := ex.s.tokens.Chat(&req)
		switch {
		case errors.Is(err, tokens.ErrTooLong):
			c = int(est) // beyond what the gateway counts: the estimate decides
		case err != nil:
			return 0, nil // no tokenizer: leave it to the backend
		}
		n, room = c, ctxLen-c-c*ctxMarginPct/100-ctxMarginTokens
	}
	if room < 1 {
		e := apierr.New(canon.ErrInvalidRequest, "context_length_exceeded",
			"the input is about "+itoa(int64(n))+" tokens; model "+ex.req.Model+"'s context window is "+itoa(int64(ctxLen))+
				" tokens: shorten the input")
		e.Param = "messages"
		return 0, e
	}
	if want > 0 && want <= int64(room) {
		return 0, nil
	}
	return room, nil
}

// outputCap combines the budget's cap (ex.maxOutput) with the context's.
func outputCap(budget, context int) int {
	switch {
	case budget == 0:
		return context
	case context == 0:
		return budget
	}
	return min(budget, context)
}

// exactCount is the backend's own count of the request's input, when its
// engine has one (vLLM) and answers.
func (ex *exchange) exactCount(b *backend.Backend, ctxLen int) (vllmCount, bool) {
	if b == nil || b.Engine != "vllm" {
		return vllmCount{}, false
	}
	return ex.vllmCount(b, ctxLen)
}
