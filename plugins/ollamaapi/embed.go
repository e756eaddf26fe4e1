package ollamaapi

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// DecodeEmbeddingRequest reads /api/embed ({model, input: string or
// [string], truncate, dimensions, keep_alive, options}) or the older
// /api/embeddings ({model, prompt}); meta route says which. truncate,
// keep_alive and options are accepted and not passed on: the canonical
// request has no truncation switch (backends truncate or refuse as they
// do) and backends manage residency themselves.
func (t *Translator) DecodeEmbeddingRequest(c *sdk.Call, body []byte, req *canon.EmbeddingRequest) error {
	route, _ := c.MetaBytes(abi.MetaRoute)
	legacy := string(route) == RouteEmbeddings
	if len(route) > 0 && !legacy && string(route) != RouteEmbed {
		return sdk.BadInput("route " + string(route) + " has no embedding request to decode")
	}
	o, err := jsonread.Object(&t.p, body)
	if err != nil {
		return err
	}
	var mv, input, prompt, dims, truncate, keepAlive *fastjson.Value
	jsonread.Visit(o, func(k []byte, v *fastjson.Value) {
		switch string(k) {
		case "model":
			mv = v
		case "input":
			input = v
		case "prompt":
			prompt = v
		case "dimensions":
			dims = v
		case "truncate":
			truncate = v
		case "keep_alive":
			keepAlive = v
		}
	})
	if req.Model, err = jsonread.Model(mv); err != nil {
		return err
	}
	if err := decodeKeepAlive(keepAlive); err != nil {
		return err
	}
	if truncate != nil {
		if _, ok := jsonread.Bool(truncate); !ok {
			return jsonread.ErrType("truncate", "a boolean")
		}
	}
	if legacy {
		return decodePrompt(prompt, req)
	}
	if dims != nil {
		n, ok := jsonread.Int(dims)
		if !ok || n < 0 || n > jsonread.MaxInt32 {
			return jsonread.ErrType("dimensions", "a non-negative integer")
		}
		req.Dimensions = int(n)
	}
	return decodeInput(input, req)
}

// emptyInput: Ollama loads the model for an empty input; every request here
// goes to a backend.
const emptyInput = " must not be empty: this gateway does not support Ollama's load-only requests"

func decodePrompt(v *fastjson.Value, req *canon.EmbeddingRequest) error {
	if v == nil {
		return jsonread.ErrRequired("prompt")
	}
	s, ok := jsonread.Str(v)
	if !ok {
		return jsonread.ErrType("prompt", "a string")
	}
	if s == "" {
		return sdk.BadInput("prompt" + emptyInput)
	}
	req.Input = []string{s}
	return nil
}

func decodeInput(v *fastjson.Value, req *canon.EmbeddingRequest) error {
	if v == nil {
		return jsonread.ErrRequired("input")
	}
	if s, ok := jsonread.Str(v); ok {
		if s == "" {
			return sdk.BadInput("input" + emptyInput)
		}
		req.Input = []string{s}
		return nil
	}
	arr, err := v.Array()
	if err != nil {
		return jsonread.ErrType("input", "a string or an array of strings")
	}
	if len(arr) == 0 {
		return sdk.BadInput("input" + emptyInput)
	}
	req.Input = make([]string, len(arr))
	for i, e := range arr {
		s, ok := jsonread.Str(e)
		if !ok {
			return jsonread.ErrType(jsonread.At("input", i), "a string")
		}
		req.Input[i] = s
	}
	return nil
}

// EncodeEmbeddingResponse writes /api/embed's {"model","embeddings":[[…]],
// "total_duration","load_duration","prompt_eval_count"} — every field real
// Ollama returns, which clients (ollama-ai-provider-v2) require; the
// durations are 0, as for chat — or /api/embeddings' {"embedding":[…]}
// (its first vector).
func (t *Translator) EncodeEmbeddingResponse(c *sdk.Call, resp *canon.EmbeddingResponse, out *sdk.Output) error {
	route, _ := c.MetaBytes(abi.MetaRoute)
	b := out.Body
	if string(route) == RouteEmbeddings {
		b = append(b, `{"embedding":`...)
		var v []float32
		if len(resp.Vectors) > 0 {
			v = resp.Vectors[0]
		}
		out.Body = append(appendVector(b, v), '}')
		return nil
	}
	b = append(b, `{"model":`...)
	if name, ok := c.MetaBytes(abi.MetaModel); ok && len(name) > 0 {
		b = jsonw.Bytes(b, name)
	} else {
		b = jsonw.String(b, resp.Model)
	}
	b = append(b, `,"embeddings":[`...)
	for i := range resp.Vectors {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendVector(b, resp.Vectors[i])
	}
	var in int64
	if resp.Usage != nil {
		in = int64(resp.Usage.PromptTokens)
	}
	b = append(b, `],"total_duration":0,"load_duration":0,"prompt_eval_count":`...)
	b = jsonw.Int(b, in)
	out.Body = append(b, '}')
	return nil
}

// appendVector writes float32s as encoding/json does (Ollama's own
// server is Go): shortest form, exponent outside [1e-6, 1e21);
// non-finite values, which JSON cannot carry, become 0. The host formats
// them when this runs as .wasm (sdk.AppendFloat32s).
func appendVector(b []byte, v []float32) []byte { return sdk.AppendFloat32s(b, v, sdk.FloatJS) }
