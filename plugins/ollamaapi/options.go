package ollamaapi

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// decodeOptions reads the sampling options the canonical request carries.
// Ollama's runner options (num_ctx, num_gpu, num_thread, ...) and the
// sampling options it alone has (mirostat, typical_p, repeat_last_n, ...)
// are ignored: the gateway sets each backend's context window itself, and
// the other backends have no equivalent.
func decodeOptions(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return nil
	}
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType("options", "an object")
	}
	var firstErr error
	jsonread.Visit(o, func(k []byte, v *fastjson.Value) {
		if firstErr == nil && v != nil {
			firstErr = decodeOption(string(k), v, req)
		}
	})
	return firstErr
}

func decodeOption(k string, v *fastjson.Value, req *canon.ChatRequest) error {
	var dst **float64
	switch k {
	case "temperature":
		dst = &req.Temperature
	case "top_p":
		dst = &req.TopP
	case "min_p":
		dst = &req.MinP
	case "repeat_penalty":
		dst = &req.RepetitionPenalty
	case "presence_penalty":
		dst = &req.PresencePenalty
	case "frequency_penalty":
		dst = &req.FrequencyPenalty
	case "top_k":
		n, ok := jsonread.Int(v)
		if !ok || n < -1 || n > jsonread.MaxInt32 {
			return jsonread.ErrType("options.top_k", "an integer")
		}
		// Ollama reads 0 (and llama.cpp a negative value) as "off"; the
		// canonical request's -1 says the same to every backend.
		if n <= 0 {
			n = -1
		}
		k := int(n)
		req.TopK = &k
		return nil
	case "num_predict":
		n, ok := jsonread.Int(v)
		if !ok || n > jsonread.MaxInt32 {
			return jsonread.ErrType("options.num_predict", "an integer")
		}
		// -1 (no limit) and -2 (fill the context) leave the limit to the
		// backend; Ollama's runner treats 0 the same way.
		if n > 0 {
			req.MaxTokens = int(n)
		}
		return nil
	case "seed":
		n, ok := jsonread.Int(v)
		if !ok {
			return jsonread.ErrType("options.seed", "an integer")
		}
		req.Seed = &n
		return nil
	case "stop":
		return decodeStop(v, req)
	default:
		return nil
	}
	x, ok := jsonread.Float(v)
	if !ok {
		return jsonread.ErrType("options."+k, "a number")
	}
	*dst = &x
	return nil
}

// decodeStop reads stop as an array of strings (Ollama's type) or, leniently,
// one string; empty strings are dropped.
func decodeStop(v *fastjson.Value, req *canon.ChatRequest) error {
	if s, ok := jsonread.Str(v); ok {
		if s != "" {
			req.Stop = []string{s}
		}
		return nil
	}
	arr, err := v.Array()
	if err != nil {
		return jsonread.ErrType("options.stop", "an array of strings")
	}
	for _, e := range arr {
		s, ok := jsonread.Str(e)
		if !ok {
			return jsonread.ErrType("options.stop", "an array of strings")
		}
		if s != "" {
			req.Stop = append(req.Stop, s)
		}
	}
	return nil
}
