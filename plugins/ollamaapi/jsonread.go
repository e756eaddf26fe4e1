package ollamaapi

import (
	"math"
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
)

// Readers of typed values. Each returns ok=false when v has the wrong type;
// the caller turns that into an error naming the field, so paths like
// "messages[2].images[0]" are only built on the error path.

func getStr(v *fastjson.Value) (string, bool) {
	if v.Type() != fastjson.TypeString {
		return "", false
	}
	b, _ := v.StringBytes()
	return string(b), true
}

func getBool(v *fastjson.Value) (bool, bool) {
	switch v.Type() {
	case fastjson.TypeTrue:
		return true, true
	case fastjson.TypeFalse:
		return false, true
	}
	return false, false
}

func getFloat(v *fastjson.Value) (float64, bool) {
	if v.Type() != fastjson.TypeNumber {
		return 0, false
	}
	f, err := v.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// getInt reads an integral number; 1e3 and 2.0 are accepted, 1.5 is not.
func getInt(v *fastjson.Value) (int64, bool) {
	if v.Type() != fastjson.TypeNumber {
		return 0, false
	}
	if n, err := v.Int64(); err == nil {
		return n, true
	}
	f, ok := getFloat(v)
	if !ok || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// maxInt32 bounds token counts so they fit an int on every platform (wasm
// included).
const maxInt32 = 1<<31 - 1

func errType(field, what string) error { return sdk.BadInput(field + " must be " + what) }

func errRequired(field string) error { return sdk.BadInput(field + " is required") }

// at builds "base[i]" for error messages.
func at(base string, i int) string { return base + "[" + strconv.Itoa(i) + "]" }

// msgField builds "messages[i].field".
func msgField(i int, field string) string { return at("messages", i) + "." + field }

// visit calls f for each field of an object, passing nil for JSON null so a
// null reads like an absent field (the official Go client sends
// "options":null). When a key repeats, the last one wins, as in Go's JSON
// decoder, which Ollama uses.
func visit(o *fastjson.Object, f func(k []byte, v *fastjson.Value)) {
	o.Visit(func(k []byte, v *fastjson.Value) {
		if v.Type() == fastjson.TypeNull {
			v = nil
		}
		f(k, v)
	})
}

// parseBody validates and parses a request body as one JSON object.
func (t *Translator) parseBody(body []byte) (*fastjson.Object, error) {
	// fastjson's parser is lenient (bad escapes, odd numbers); its validator
	// is strict and cheap, so run it first.
	if err := fastjson.ValidateBytes(body); err != nil {
		return nil, sdk.BadInput("request body is not valid JSON: " + err.Error())
	}
	v, err := t.p.ParseBytes(body)
	if err != nil {
		return nil, sdk.BadInput("request body is not valid JSON: " + err.Error())
	}
	o, err := v.Object()
	if err != nil {
		return nil, sdk.BadInput("request body must be a JSON object")
	}
	return o, nil
}

// model reads the required model name.
func model(v *fastjson.Value) (string, error) {
	if v == nil {
		return "", errRequired("model")
	}
	s, ok := getStr(v)
	if !ok {
		return "", errType("model", "a string")
	}
	if s == "" {
		return "", errRequired("model")
	}
	return s, nil
}
