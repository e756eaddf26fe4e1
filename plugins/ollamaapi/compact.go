package ollamaapi

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// appendCompact writes v as compact JSON. fastjson's own MarshalTo copies
// raw string text as it came and quotes unescaped keys with Go's
// strconv.Quote (\x01 is not JSON), so strings and keys are re-escaped
// here with jsonw; numbers keep their text.
func appendCompact(b []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		b = append(b, '{')
		n := 0
		o.Visit(func(k []byte, e *fastjson.Value) {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(jsonw.Bytes(b, k), ':')
			b = appendCompact(b, e)
		})
		return append(b, '}')
	case fastjson.TypeArray:
		a, _ := v.Array()
		b = append(b, '[')
		for i, e := range a {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCompact(b, e)
		}
		return append(b, ']')
	case fastjson.TypeString:
		s, _ := v.StringBytes()
		return jsonw.Bytes(b, s)
	}
	return v.MarshalTo(b) // number, true, false, null
}
