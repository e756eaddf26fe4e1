// Package rawjson writes a parsed fastjson value back as compact JSON text,
// for the adapters that carry a backend's JSON through as canonical raw
// JSON (Ollama's tool-call arguments, vLLM's logprobs), and finds a
// member in a body without parsing the rest (FindMember, for Ollama's
// embedding vectors).
package rawjson

import (
	"strconv"

	"github.com/mindrouter/mindrouter/sdk/f32json"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
	"github.com/valyala/fastjson"
)

// AppendCompact writes v as compact JSON. fastjson's own MarshalTo passes
// raw string bytes through unchecked and re-quotes with strconv, which is
// not JSON for every input, so strings go through jsonw.
func AppendCompact(b []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		b = append(b, '{')
		first := true
		o.Visit(func(k []byte, v *fastjson.Value) {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = jsonw.Bytes(b, k)
			b = append(b, ':')
			b = AppendCompact(b, v)
		})
		return append(b, '}')
	case fastjson.TypeArray:
		arr, _ := v.Array()
		b = append(b, '[')
		for i, e := range arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendCompact(b, e)
		}
		return append(b, ']')
	case fastjson.TypeString:
		return jsonw.Bytes(b, v.GetStringBytes())
	case fastjson.TypeNumber:
		return appendNumber(b, v)
	case fastjson.TypeTrue:
		return append(b, "true"...)
	case fastjson.TypeFalse:
		return append(b, "false"...)
	}
	return append(b, "null"...)
}

// appendNumber copies a number's text when it is valid JSON; fastjson also
// accepts forms such as "1e", "+1" or "NaN", which are normalized or nulled.
func appendNumber(b []byte, v *fastjson.Value) []byte {
	n := len(b)
	b = v.MarshalTo(b)
	if ValidNumber(b[n:]) {
		return b
	}
	f, err := strconv.ParseFloat(string(b[n:]), 64)
	if err != nil {
		return append(b[:n], "null"...)
	}
	return jsonw.Float(b[:n], f)
}

// ValidNumber reports whether s matches the JSON number grammar.
func ValidNumber(s []byte) bool { return f32json.ValidNumber(s) }
