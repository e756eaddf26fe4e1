package openai

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// decodeSampling reads the token limit and sampling parameters.
func decodeSampling(f *reqFields, req *canon.ChatRequest) error {
	// Read both limits so a malformed one is reported even when the other
	// wins; max_completion_tokens (the current name) beats max_tokens.
	for _, m := range [...]struct {
		v    *fastjson.Value
		name string
	}{{f.maxTokens, "max_tokens"}, {f.maxCompletionTokens, "max_completion_tokens"}} {
		if m.v == nil {
			continue
		}
		n, ok := jsonread.Int(m.v)
		if !ok {
			return jsonread.ErrType(m.name, "an integer")
		}
		if n < 1 || n > jsonread.MaxInt32 {
			return sdk.BadInput(m.name + " must be between 1 and 2147483647")
		}
		req.MaxTokens = int(n)
	}

	// OpenAI's ranges (repetition_penalty is vLLM's: any positive value);
	// out of range is the client's mistake, said before a backend is used.
	floats := [...]struct {
		v        *fastjson.Value
		name     string
		dst      **float64
		min, max float64
		rng      string
	}{
		{f.temperature, "temperature", &req.Temperature, 0, 2, "between 0 and 2"},
		{f.topP, "top_p", &req.TopP, 0, 1, "between 0 and 1"},
		{f.minP, "min_p", &req.MinP, 0, 1, "between 0 and 1"},
		{f.repetitionPenalty, "repetition_penalty", &req.RepetitionPenalty, 1e-9, 1e9, "greater than 0"},
		{f.frequencyPenalty, "frequency_penalty", &req.FrequencyPenalty, -2, 2, "between -2 and 2"},
		{f.presencePenalty, "presence_penalty", &req.PresencePenalty, -2, 2, "between -2 and 2"},
	}
	for i := range floats {
		p := &floats[i]
		if p.v == nil {
			continue
		}
		x, ok := jsonread.Float(p.v)
		if !ok {
			return jsonread.ErrType(p.name, "a number")
		}
		if !(x >= p.min && x <= p.max) { // NaN fails too
			return sdk.BadInput(p.name + " must be " + p.rng)
		}
		*p.dst = &x
	}

	if f.topK != nil {
		n, ok := jsonread.Int(f.topK)
		if !ok || n < -1 || n > jsonread.MaxInt32 {
			return jsonread.ErrType("top_k", "an integer (-1 disables it)")
		}
		k := int(n)
		req.TopK = &k
	}
	if f.seed != nil {
		n, ok := jsonread.Int(f.seed)
		if !ok {
			return jsonread.ErrType("seed", "an integer")
		}
		req.Seed = &n
	}
	if f.n != nil {
		n, ok := jsonread.Int(f.n)
		switch {
		case !ok:
			return jsonread.ErrType("n", "an integer")
		case n < 1 || n > maxChoices:
			return sdk.BadInput("n must be between 1 and 128")
		}
		req.N = int(n)
	}
	if err := decodeLogprobs(f, req); err != nil {
		return err
	}
	return decodeStop(f.stop, req)
}

// maxChoices is OpenAI's bound on n.
const maxChoices = 128

// decodeLogprobs reads logprobs and top_logprobs (0 to 20, OpenAI's range,
// and only with logprobs true, as OpenAI requires).
func decodeLogprobs(f *reqFields, req *canon.ChatRequest) error {
	if f.logprobs != nil {
		b, ok := jsonread.Bool(f.logprobs)
		if !ok {
			return jsonread.ErrType("logprobs", "a boolean")
		}
		req.Logprobs = b
	}
	if f.topLogprobs != nil {
		n, ok := jsonread.Int(f.topLogprobs)
		if !ok || n < 0 || n > 20 {
			return sdk.BadInput("top_logprobs must be an integer between 0 and 20")
		}
		if n > 0 && !req.Logprobs {
			return sdk.BadInput("top_logprobs requires logprobs to be true")
		}
		req.TopLogprobs = int(n)
	}
	return nil
}

// decodeStop reads stop as a string or an array of strings; empty strings
// are dropped.
func decodeStop(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return nil
	}
	const msg = "a string or an array of strings"
	if s, ok := jsonread.Str(v); ok {
		if s != "" {
			req.Stop = []string{s}
		}
		return nil
	}
	arr, err := v.Array()
	if err != nil {
		return jsonread.ErrType("stop", msg)
	}
	for _, e := range arr {
		s, ok := jsonread.Str(e)
		if !ok {
			return jsonread.ErrType("stop", msg)
		}
		if s != "" {
			req.Stop = append(req.Stop, s)
		}
	}
	return nil
}
