package anthropic

import (
	"math"
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
)

// Readers of typed values. Each returns ok=false when v has the wrong type;
// the caller turns that into an error naming the field, so paths like
// "messages[2].content[0].text" are only built on the error path.

func getStr(v *fastjson.Value) (string, bool) {
	if v.Type() != fastjson.TypeString {
		return "", false
	}
	b, _ := v.StringBytes()
	return string(b), true
}

// isStr reports whether v is the string s, without allocating.
func isStr(v *fastjson.Value, s string) bool {
	if v.Type() != fastjson.TypeString {
		return false
	}
	b, _ := v.StringBytes()
	return string(b) == s
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

// maxInt32 bounds token counts and indexes so they fit an int on every
// platform (wasm included) with room to spare.
const maxInt32 = 1<<31 - 1

func errType(field, what string) error { return sdk.BadInput(field + " must be " + what) }

func errRequired(field string) error { return sdk.BadInput(field + " is required") }

// at builds "base[i]" for error messages.
func at(base string, i int) string { return base + "[" + strconv.Itoa(i) + "]" }

// msgField builds "messages[i].field".
func msgField(i int, field string) string { return at("messages", i) + "." + field }

// visit calls f for each field of an object, passing nil for JSON null so a
// null reads like an absent field. When a key repeats, the last one wins, as
// in Python's and Go's JSON decoders.
func visit(o *fastjson.Object, f func(k []byte, v *fastjson.Value)) {
	o.Visit(func(k []byte, v *fastjson.Value) {
		if v.Type() == fastjson.TypeNull {
			v = nil
		}
		f(k, v)
	})
}
