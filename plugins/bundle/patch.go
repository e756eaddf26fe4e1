package bundle

import (
	"math"
	"strconv"
	"unsafe"

	"github.com/valyala/fastjson/fastfloat"

	"github.com/mindrouter/mindrouter/plugins/openai"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// openaiVLLM is the same-dialect patch (sdk.Patch) of the openai
// translator with the vllm adapter: vLLM serves OpenAI's Chat Completions
// API, so a fused call rewrites the bytes in one pass instead of decoding
// them into canonical values and encoding them again.
//
// It gives byte for byte what the two components give. It handles a call
// only when every value it must interpret has a shape it knows and
// declines (the full path runs) on anything else: keys spelled with
// escapes or given twice, numbers in an unusual form, strings with lone
// surrogates, images and legacy function fields in requests, reasoning,
// tool calls, logprobs or n > 1 in responses and streams, missing gateway
// meta, and every input the components would refuse. Strings are copied as
// they are when their bytes are what the components' JSON writer would
// write (the usual case), and re-escaped otherwise.
//
// What the full path does, and the patch therefore does too: see
// patchRequest, patchResponse and patchStream below, whose comments tie
// each rule to the code of openai and vllm it mirrors.
type openaiVLLM struct {
	s    scanner
	tmp  []byte // unescape scratch
	msgs []byte // the request's messages, written during the scan
	tool []byte // the request's tools
	aux  []byte // the request's tool_choice and response_format
	text []byte // one message's content parts, joined
	call []byte // one message's tool calls
	hdr  []byte // a stream chunk's opening, the same for every chunk of a call
	tmpl eventTemplate
	sh   shapeScratch
	st   sdk.StateWriter
	ans  answerSpans // a response's id, created and counts (patch_shape.go)

	// Calls handled and declined, by kind (request, response, stream).
	handled, declined [3]int
}

// Patch kinds, for the counters.
const (
	patchReq = iota
	patchResp
	patchStream
)

func newOpenAIVLLM() *openaiVLLM { return &openaiVLLM{} }

var _ sdk.Patch = (*openaiVLLM)(nil)

func (p *openaiVLLM) count(kind int, ok bool) bool {
	if ok {
		p.handled[kind]++
	} else {
		p.declined[kind]++
	}
	return ok
}

// PatchRequest implements sdk.Patch.
func (p *openaiVLLM) PatchRequest(c *sdk.Call, body []byte, req *canon.ChatRequest, out *sdk.Output) bool {
	return p.count(patchReq, p.request(c, body, req, out))
}

// PatchResponse implements sdk.Patch.
func (p *openaiVLLM) PatchResponse(c *sdk.Call, body []byte, r *sdk.PatchReport, out *sdk.Output) bool {
	return p.count(patchResp, p.response(c, body, r, out))
}

// PatchStream implements sdk.Patch.
func (p *openaiVLLM) PatchStream(c *sdk.Call, st *sdk.PatchStream, events [][]byte, r *sdk.PatchReport, out *sdk.Output) bool {
	return p.count(patchStream, p.stream(c, st, events, r, out))
}

// Number readers, strict: plain integers only (the components also take
// 1e3 and 2.0; the patch declines those).

// plainInt reads an integer span of at most 18 digits.
func plainInt(b []byte, v span) (int64, bool) {
	if v.kind != kNum || v.flags&nfInt == 0 {
		return 0, false
	}
	d := b[v.a:v.b]
	neg := d[0] == '-'
	if neg {
		d = d[1:]
	}
	if len(d) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range d {
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// float reads a number as fastjson does (openai's getFloat).
func float(b []byte, v span) (float64, bool) {
	if v.kind != kNum {
		return 0, false
	}
	// The string does not outlive the call (an error, which keeps it, is
	// dropped): no copy.
	f, err := fastfloat.Parse(unsafe.String(&b[v.a], v.b-v.a))
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// shortestFloat reports whether the JSON number text t is what jsonw.Float
// writes for its value, so that it can be copied: an optional minus, an
// integer part without leading zeros, an optional fraction without
// trailing zeros, no exponent, at most 15 significant digits and, with a
// fraction, a magnitude of at least 1e-6 (below it jsonw writes an
// exponent). Why that suffices: a decimal of at most 15 significant digits
// is the only one of at most 15 digits that rounds to its float64 (DBL_DIG),
// so the shortest form that reads back as that float64 is its own digits;
// jsonw writes those digits in plain notation from 1e-6 to 1e21, and a
// whole number below 1e15 as an integer. Minus zero in any spelling
// ("-0", "-0.0") is left to jsonw.
func shortestFloat(t []byte) bool {
	i := 0
	if len(t) > 0 && t[0] == '-' {
		i++
	}
	d := i
	for i < len(t) && '0' <= t[i] && t[i] <= '9' {
		i++
	}
	intDigits := i - d
	if intDigits == 0 || intDigits > 1 && t[d] == '0' {
		return false
	}
	zeroInt := intDigits == 1 && t[d] == '0'
	sig := intDigits
	if zeroInt {
		sig = 0
	}
	if i == len(t) {
		return sig <= 15 && !(zeroInt && d == 1) // "-0": left to jsonw
	}
	if t[i] != '.' {
		return false // an exponent
	}
	i++
	f := i
	lead := 0 // zeros after the point before the first nonzero digit, for 0.x
	for i < len(t) && '0' <= t[i] && t[i] <= '9' {
		if zeroInt && sig == 0 && t[i] == '0' {
			lead++
		} else {
			sig++
		}
		i++
	}
	if i != len(t) || i == f || t[i-1] == '0' || sig == 0 || sig > 15 {
		return false // no digits, a trailing zero, all zeros, or too many
	}
	return !zeroInt || lead <= 5
}

// is reports whether string span v, without escapes, is s.
func is(b []byte, v span, s string) bool {
	return v.kind == kStr && v.flags&sfEsc == 0 && string(b[v.a:v.b]) == s
}

// boolOf reads true or false.
func boolOf(v span) (val, ok bool) {
	switch v.kind {
	case kTrue:
		return true, true
	case kFalse:
		return false, true
	}
	return false, false
}

func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }

// metaOK reports whether meta holds the gateway's id, model and created
// (openai's header uses them over the backend's; the patch needs them).
func metaOK(c *sdk.Call) (id, model, created []byte, ok bool) {
	// Only chat answers: the completions route's text_completion objects
	// (and any later route) go through the components.
	if route, _ := c.MetaBytes(abi.MetaRoute); len(route) > 0 && string(route) != openai.RouteChat {
		return nil, nil, nil, false
	}
	id, _ = c.MetaBytes(abi.MetaID)
	model, _ = c.MetaBytes(abi.MetaModel)
	created, _ = c.MetaBytes(abi.MetaCreated)
	if len(id) == 0 || len(model) == 0 || !openai.ValidCreated(created) {
		return nil, nil, nil, false
	}
	return id, model, created, true
}
