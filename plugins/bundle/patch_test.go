package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/shape"
)

// The same-dialect patch (openaiVLLM) against the full translation: every
// golden vector, and random inputs derived from them, through the bundle
// with the patch and the bundle without it. Status, error, result flags,
// state and meta must be identical; bodies must be the same JSON (parsed
// into map[string]any: key order and number spelling may differ), and
// stream bodies the same events. The patch in fact writes the very same
// bytes, which the tests check too (fused_test.go's byte-exact fused ==
// canonical tests run with the patch in the bundle as well).

// patchPair is the bundle with and without a patch of the openai
// translator: for vllm (newPatchPair) or ollama (newOllamaPair, in
// patch_ollama_test.go).
type patchPair struct {
	counts        *[3]int // the patch's handled calls, by kind
	ai            uint16  // the adapter the calls go to
	patched, full *sdk.Plugin
	shaped        int // stream events the patch's shapes translated (stream)
}

func newPatchPair() *patchPair {
	pt := newOpenAIVLLM()
	ps := parts()
	ps[OpenAI] = ps[OpenAI].Patch("vllm", pt)
	return &patchPair{counts: &pt.handled, ai: VLLM, patched: sdk.NewBundle(Name, Version, ps...), full: sdk.NewBundle(Name, Version, parts()...)}
}

// jsonSame reports whether two bodies are the same JSON value.
func jsonSame(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// sseSame reports whether two SSE bodies carry the same events, JSON
// payloads compared as JSON.
func sseSame(a, b []byte) bool {
	ea, eb := frameSSE(a), frameSSE(b)
	if len(ea) != len(eb) {
		return false
	}
	for i := range ea {
		if !jsonSame(ea[i], eb[i]) {
			return false
		}
	}
	return true
}

// compare checks one call's results, but for a stream shape the patched
// side leaves (stream checks those); it returns "" or the difference.
func compare(got, want res, stream bool) string {
	// The full path leaves no stream or response shape; stream and
	// TestResponseShape_MatchesPatch check the patch's.
	delete(got.Meta, abi.MetaStreamShape)
	delete(got.Meta, abi.MetaResponseShape)
	same := jsonSame
	if stream {
		same = sseSame
	}
	if got.Status != want.Status || got.Error != want.Error || got.Flags != want.Flags ||
		!bytes.Equal(got.State, want.State) || metaString(got.Meta) != metaString(want.Meta) || !same(got.Payload, want.Payload) {
		return fmt.Sprintf("patched: %s %q flags %b state %x meta %s\n%s\nfull:    %s %q flags %b state %x meta %s\n%s",
			got.Status, got.Error, got.Flags, got.State, metaString(got.Meta), got.Payload,
			want.Status, want.Error, want.Flags, want.State, metaString(want.Meta), want.Payload)
	}
	if !bytes.Equal(got.Payload, want.Payload) {
		return fmt.Sprintf("same JSON, different bytes:\npatched: %s\nfull:    %s", got.Payload, want.Payload)
	}
	return ""
}

// request runs one fused request both ways; handled reports whether the
// patch took it.
func (pp *patchPair) request(t testing.TB, meta, body []byte) (handled bool, diff string) {
	h := pp.counts[patchReq]
	got := do(t, pp.patched, abi.OpFusedRequest, input(OpenAI, pp.ai, 0, nil, meta, body))
	want := do(t, pp.full, abi.OpFusedRequest, input(OpenAI, pp.ai, 0, nil, meta, body))
	return pp.counts[patchReq] > h, compare(got, want, false)
}

func (pp *patchPair) response(t testing.TB, meta, body []byte) (handled bool, diff string) {
	h := pp.counts[patchResp]
	got := do(t, pp.patched, abi.OpFusedResponse, input(OpenAI, pp.ai, 0, nil, meta, body))
	want := do(t, pp.full, abi.OpFusedResponse, input(OpenAI, pp.ai, 0, nil, meta, body))
	return pp.counts[patchResp] > h, compare(got, want, false)
}

// stream runs a stream both ways, batch by batch as the relay does (each
// side with its own state), comparing every call; it returns how many
// calls the patch handled and how many calls there were. It plays the
// host's part with the stream shapes the patched side leaves (sdk/shape):
// the leading events of a batch that match the shape are translated by
// it, not by a patched call, and the full path's call on those events
// alone must write the same bytes, count the same output, and change no
// state and report no usage, finish or end (pp.shaped counts them).
func (pp *patchPair) stream(t testing.TB, meta []byte, batches [][][]byte) (handled, calls int, diff string) {
	var sp, sf []byte
	var sh shape.Shape
	var shBuf []byte
	first := true
	for i := 0; i <= len(batches); i++ {
		end := i == len(batches)
		var events [][]byte
		if !end {
			events = batches[i]
		}
		if !end && sh.Valid() {
			out, _, k, tokens := sh.ApplyList(nil, list(events))
			if k > 0 {
				want := do(t, pp.full, abi.OpFusedStream, input(OpenAI, pp.ai, flags(false, false), sf, meta, list(events[:k])))
				if d := shapeSame(out, tokens, sf, want); d != "" {
					return handled, calls, fmt.Sprintf("call %d of %d, %d events by the shape: %s", i, len(batches)+1, k, d)
				}
				pp.shaped += k
				if events = events[k:]; len(events) == 0 {
					continue
				}
			}
		}
		h := pp.counts[patchStream]
		got := do(t, pp.patched, abi.OpFusedStream, input(OpenAI, pp.ai, flags(first, end), sp, meta, list(events)))
		want := do(t, pp.full, abi.OpFusedStream, input(OpenAI, pp.ai, flags(first, end), sf, meta, list(events)))
		calls++
		if pp.counts[patchStream] > h {
			handled++
		}
		sh.Reset()
		if v, ok := got.Meta[abi.MetaStreamShape]; ok {
			delete(got.Meta, abi.MetaStreamShape)
			if err := sh.Parse([]byte(v)); err != nil {
				return handled, calls, fmt.Sprintf("call %d of %d: a shape the host refuses: %v", i, len(batches)+1, err)
			}
			shBuf = sh.Clone(shBuf)
		}
		if d := compare(got, want, true); d != "" {
			return handled, calls, fmt.Sprintf("call %d of %d: %s", i, len(batches)+1, d)
		}
		if !want.ok() {
			return handled, calls, ""
		}
		first = false
		if want.Flags&abi.ResultStateKeep == 0 {
			sp, sf = got.State, want.State
		}
		if want.Flags&abi.ResultStreamDone != 0 && !end {
			i = len(batches) - 1 // the relay stops reading; the end call follows
		}
	}
	return handled, calls, ""
}

// shapeSame checks a shape's translation of some events (out, tokens: the
// output estimate) against the full path's call on them with state st.
func shapeSame(out []byte, tokens int, st []byte, want res) string {
	if !want.ok() || want.Flags&abi.ResultStreamDone != 0 || want.Flags&abi.ResultStateKeep == 0 && !bytes.Equal(want.State, st) {
		return fmt.Sprintf("the full path: %s %q flags %b state %x (was %x)", want.Status, want.Error, want.Flags, want.State, st)
	}
	wm := fmt.Sprintf("%v", want.Meta)
	if tokens > 0 {
		if len(want.Meta) != 1 || want.Meta[abi.MetaOutputTokens] != fmt.Sprint(tokens) {
			return fmt.Sprintf("meta %s, the shape counted %d", wm, tokens)
		}
	} else if len(want.Meta) != 0 {
		return fmt.Sprintf("meta %s, the shape counted none", wm)
	}
	if !bytes.Equal(out, want.Payload) {
		return fmt.Sprintf("shape: %q\nfull:  %q", out, want.Payload)
	}
	return ""
}

func TestPatch_Requests(t *testing.T) {
	pp := newPatchPair()
	n, handled := 0, 0
	var fell []string
	for _, v := range requestVectors(t) {
		if v.ti != OpenAI {
			continue
		}
		took := false
		for _, ctx := range []string{"", "32768"} {
			// The operator's thinking default (abi.MetaThinkDefault): the
			// patch applies it as the full path does.
			for _, think := range []string{"", "off", "on"} {
				kv := append([]string{}, routeMeta...)
				if ctx != "" {
					kv = append(kv, abi.MetaContextLength, ctx)
				}
				if think != "" {
					kv = append(kv, abi.MetaThinkDefault, think)
				}
				h, d := pp.request(t, metaList(kv...), v.body)
				if d != "" {
					t.Errorf("%s ctx=%s think_default=%s: %s", v.name, ctx, think, d)
				}
				took = took || h
			}
		}
		n++
		if took {
			handled++
		} else {
			fell = append(fell, shortName(v.name))
		}
	}
	// Another route has no body to decode: the full path's error.
	if h, d := pp.request(t, metaList(abi.MetaRoute, "models"), read(t, "../openai/testdata/requests/basic.req.json")); h || d != "" {
		t.Errorf("models route: handled %v %s", h, d)
	}
	t.Logf("requests: the patch handled %d of %d vectors; full path for %s", handled, n, strings.Join(fell, ", "))
}

func TestPatch_Responses(t *testing.T) {
	pp := newPatchPair()
	meta := metaList(headerMeta...)
	n, handled := 0, 0
	var fell []string
	for _, v := range responseVectors(t) {
		if v.ai != VLLM {
			continue
		}
		h, d := pp.response(t, meta, v.body)
		if d != "" {
			t.Errorf("%s: %s", v.name, d)
		}
		// Without the gateway's header meta the patch declines.
		if h2, d := pp.response(t, metaList(abi.MetaModel, "m"), v.body); h2 || d != "" {
			t.Errorf("%s without id meta: handled %v %s", v.name, h2, d)
		}
		n++
		if h {
			handled++
		} else {
			fell = append(fell, shortName(v.name))
		}
	}
	t.Logf("responses: the patch handled %d of %d vectors; full path for %s", handled, n, strings.Join(fell, ", "))
}

func TestPatch_Streams(t *testing.T) {
	pp := newPatchPair()
	rng := rand.New(rand.NewPCG(3, 5))
	vectors, whole, partly, calls, handled := 0, 0, 0, 0, 0
	var fell []string
	for _, v := range streamVectors(t) {
		if v.ai != VLLM {
			continue
		}
		vectors++
		vh, vc := 0, 0
		for _, usage := range []string{"0", "1"} {
			meta := metaList(append(append([]string{}, headerMeta...), abi.MetaIncludeUsage, usage)...)
			cuts := splits(rng, v.events, 6)
			lead := [][][]byte{nil}
			for _, e := range v.events {
				lead = append(lead, [][]byte{e})
			}
			for i, batches := range append(cuts, lead) {
				h, c, d := pp.stream(t, meta, batches)
				if d != "" {
					t.Errorf("%s include_usage=%s split %d: %s", v.name, usage, i, d)
				}
				vh, vc = vh+h, vc+c
			}
		}
		calls, handled = calls+vc, handled+vh
		switch {
		case vh == vc:
			whole++
		case vh > 0:
			partly++
			fell = append(fell, fmt.Sprintf("%s (%d of %d calls)", shortName(v.name), vh, vc))
		default:
			fell = append(fell, shortName(v.name)+" (none)")
		}
	}
	t.Logf("streams: the patch handled every call of %d of %d vectors, some calls of %d; %d of %d calls in all; full path for %s; %d events by the stream shape",
		whole, vectors, partly, handled, calls, strings.Join(fell, ", "), pp.shaped)
	if pp.shaped == 0 {
		t.Error("no event was translated by a stream shape")
	}
}

func shortName(p string) string {
	if i := strings.Index(p, "testdata/"); i >= 0 {
		return p[i+len("testdata/"):]
	}
	return p
}

// TestPatch_Mutations runs random variations of the golden vectors
// (values replaced, removed, repeated or retyped, fields added, strings and
// keys re-spelled with escapes, whitespace added, bytes cut) through both
// paths.
func TestPatch_Mutations(t *testing.T) {
	pp := newPatchPair()
	rng := rand.New(rand.NewPCG(11, 13))
	rounds := 40
	if testing.Short() {
		rounds = 8
	}
	var reqs, resps, streams [][]byte
	for _, v := range requestVectors(t) {
		if v.ti == OpenAI {
			reqs = append(reqs, v.body)
		}
	}
	for _, v := range responseVectors(t) {
		if v.ai == VLLM {
			resps = append(resps, v.body)
		}
	}
	var streamVecs [][][]byte
	for _, v := range streamVectors(t) {
		if v.ai == VLLM {
			streamVecs = append(streamVecs, v.events)
			streams = append(streams, v.events...)
		}
	}
	route := metaList(routeMeta...)
	hdr := metaList(append(append([]string{}, headerMeta...), abi.MetaIncludeUsage, "1")...)
	var nReq, hReq, nResp, hResp, nCalls, hCalls int
	for range rounds {
		for _, body := range reqs {
			m := mutate(rng, body, reqs)
			h, d := pp.request(t, route, m)
			if d != "" {
				t.Fatalf("request %s\n%s", m, d)
			}
			nReq++
			if h {
				hReq++
			}
		}
		for _, body := range resps {
			m := mutate(rng, body, resps)
			h, d := pp.response(t, hdr, m)
			if d != "" {
				t.Fatalf("response %s\n%s", m, d)
			}
			nResp++
			if h {
				hResp++
			}
		}
		for _, events := range streamVecs {
			var evs [][]byte
			for _, e := range events {
				if rng.IntN(4) == 0 {
					e = mutate(rng, e, streams)
				}
				evs = append(evs, e)
			}
			for _, batches := range splits(rng, evs, 1)[1:] {
				h, c, d := pp.stream(t, hdr, batches)
				if d != "" {
					t.Fatalf("stream %q\n%s", evs, d)
				}
				nCalls, hCalls = nCalls+c, hCalls+h
			}
		}
	}
	t.Logf("mutations: patch handled %d of %d requests, %d of %d responses, %d of %d stream calls",
		hReq, nReq, hResp, nResp, hCalls, nCalls)
}

func FuzzPatchRequest(f *testing.F) {
	for _, v := range requestVectors(f) {
		if v.ti == OpenAI {
			f.Add(v.body)
		}
	}
	pp := newPatchPair()
	route := metaList(routeMeta...)
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, d := pp.request(t, route, body); d != "" {
			t.Fatal(d)
		}
	})
}

func FuzzPatchResponse(f *testing.F) {
	for _, v := range responseVectors(f) {
		if v.ai == VLLM {
			f.Add(v.body)
		}
	}
	pp := newPatchPair()
	hdr := metaList(headerMeta...)
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, d := pp.response(t, hdr, body); d != "" {
			t.Fatal(d)
		}
	})
}

// FuzzPatchStream takes an SSE body (framed as the host frames it), a
// batch size and whether the client asked for usage.
func FuzzPatchStream(f *testing.F) {
	for _, v := range streamVectors(f) {
		if v.ai != VLLM {
			continue
		}
		var b []byte
		for _, e := range v.events {
			b = append(append(append(b, "data: "...), e...), "\n\n"...)
		}
		f.Add(b, uint8(1), true)
		f.Add(b, uint8(3), false)
	}
	pp := newPatchPair()
	f.Fuzz(func(t *testing.T, body []byte, size uint8, usage bool) {
		u := "0"
		if usage {
			u = "1"
		}
		meta := metaList(append(append([]string{}, headerMeta...), abi.MetaIncludeUsage, u)...)
		events := frameSSE(body)
		n := int(size%8) + 1
		var batches [][][]byte
		for len(events) > 0 {
			k := min(n, len(events))
			batches = append(batches, events[:k])
			events = events[k:]
		}
		if _, _, d := pp.stream(t, meta, batches); d != "" {
			t.Fatal(d)
		}
	})
}

// Structured mutation: a JSON document as an ordered tree, changed at
// random and written back in a random but valid style.

type jnode struct {
	kind byte // 'o', 'a', 's', 'n' (number text), 'l' (literal text)
	text string
	keys []string
	vals []*jnode
}

func parseTree(b []byte) (*jnode, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	n, err := readNode(d)
	return n, err == nil
}

func readNode(d *json.Decoder) (*jnode, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		n := &jnode{kind: 'a'}
		if v == '{' {
			n.kind = 'o'
		}
		for d.More() {
			if n.kind == 'o' {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
			}
			c, err := readNode(d)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, c)
		}
		_, err := d.Token()
		return n, err
	case string:
		return &jnode{kind: 's', text: v}, nil
	case json.Number:
		return &jnode{kind: 'n', text: v.String()}, nil
	case bool:
		return &jnode{kind: 'l', text: fmt.Sprint(v)}, nil
	default:
		return &jnode{kind: 'l', text: "null"}, nil
	}
}

func (n *jnode) clone() *jnode {
	c := *n
	c.keys = append([]string(nil), n.keys...)
	c.vals = make([]*jnode, len(n.vals))
	for i, v := range n.vals {
		c.vals[i] = v.clone()
	}
	return &c
}

// nodes lists the containers of the tree.
func (n *jnode) nodes(out []*jnode) []*jnode {
	if n.kind == 'o' || n.kind == 'a' {
		out = append(out, n)
	}
	for _, v := range n.vals {
		out = v.nodes(out)
	}
	return out
}

var mutKeys = []string{"logprobs", "reasoning_content", "reasoning", "tool_calls", "n", "index", "error", "object",
	"usage", "stop_reason", "prompt_token_ids", "kv_transfer_params", "service_tier", "stream", "stream_options",
	"include_usage", "think", "thinking", "chat_template_kwargs", "enable_thinking", "reasoning_effort", "finish_reason",
	"role", "name", "content", "tool_call_id", "function_call", "functions", "model", "messages", "max_tokens",
	"max_completion_tokens", "temperature", "top_k", "seed", "stop", "user", "safety_identifier", "tools", "type",
	"function", "parameters", "strict", "response_format", "json_schema", "schema", "text", "refusal", "image_url",
	"delta", "message", "choices", "prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details",
	"cached_tokens", "completion_tokens_details", "reasoning_tokens", "id", "arguments", "description", "tool_choice",
	"parallel_tool_calls", "budget_tokens", "extra", "done", "done_reason", "eval_count", "prompt_eval_count",
	"created_at", "response", "images"}

var mutVals = []string{`null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `2`, `0.5`, `1.5`, `1e3`, `2.0`, `1E-7`, `99999999999`,
	`12345678901234567890`, `""`, `"x"`, `"stop"`, `"length"`, `"tool_calls"`, `"error"`, `"assistant"`, `"user"`,
	`"system"`, `"developer"`, `"tool"`, `"function"`, `"text"`, `"refusal"`, `"json_object"`, `"json_schema"`,
	`"auto"`, `"none"`, `"required"`, `"low"`, `"high"`, `"xhigh"`, `"minimal"`, `"enabled"`, `"disabled"`,
	`"<think>a</think>b"`, `"a</think>b"`, `"\u2028"`, `"é\u00e9"`, `"\ud83d\ude00"`, `"\/\b\f"`, `"tab\there"`,
	`{}`, `[]`, `[1]`, `[""]`, `["a","",null]`, `{"type":"text","text":"hi"}`, `{"type":"image_url","image_url":{"url":"https://x"}}`,
	`"load"`, `" <x"`, `"  "`, `"<think>"`, `{"include_usage":true}`, `{"enable_thinking":false}`, `{"type":"object"}`, `{"name":"f"}`,
	`[{"index":0,"delta":{"content":"a"}}]`, `{"prompt_tokens":3,"completion_tokens":4}`}

// mutate returns a variation of doc (one of docs may lend it a value).
func mutate(rng *rand.Rand, doc []byte, docs [][]byte) []byte {
	root, ok := parseTree(doc)
	if !ok {
		return doc
	}
	for range rng.IntN(4) { // none: only re-spelled
		ns := root.nodes(nil)
		n := ns[rng.IntN(len(ns))]
		val := func() *jnode {
			if rng.IntN(4) == 0 {
				if other, ok := parseTree(docs[rng.IntN(len(docs))]); ok {
					os := other.nodes(nil)
					o := os[rng.IntN(len(os))]
					if len(o.vals) > 0 {
						return o.vals[rng.IntN(len(o.vals))].clone()
					}
				}
			}
			v, _ := parseTree([]byte(mutVals[rng.IntN(len(mutVals))]))
			return v
		}
		switch op := rng.IntN(6); {
		case len(n.vals) == 0 || op == 0: // add
			if n.kind == 'o' {
				n.keys = append(n.keys, mutKeys[rng.IntN(len(mutKeys))])
			}
			n.vals = append(n.vals, val())
		case op == 1: // remove
			i := rng.IntN(len(n.vals))
			if n.kind == 'o' {
				n.keys = append(n.keys[:i], n.keys[i+1:]...)
			}
			n.vals = append(n.vals[:i], n.vals[i+1:]...)
		case op == 2: // repeat
			i := rng.IntN(len(n.vals))
			if n.kind == 'o' {
				n.keys = append(n.keys, n.keys[i])
			}
			n.vals = append(n.vals, val())
		default: // replace
			n.vals[rng.IntN(len(n.vals))] = val()
		}
	}
	out := render(rng, nil, root, rng.IntN(3) == 0, rng.IntN(4) == 0)
	switch rng.IntN(20) {
	case 0:
		out = out[:rng.IntN(len(out)+1)]
	case 1:
		i := rng.IntN(len(out) + 1)
		out = append(out[:i:i], append([]byte{byte(rng.IntN(256))}, out[i:]...)...)
	}
	return out
}

// render writes n; spaced adds whitespace, escapes spells strings with
// escape sequences jsonw does not use.
func render(rng *rand.Rand, b []byte, n *jnode, spaced, escapes bool) []byte {
	ws := func() {
		if spaced && rng.IntN(2) == 0 {
			b = append(b, " \n\t"[rng.IntN(3)])
		}
	}
	switch n.kind {
	case 'o', 'a':
		open, closer := byte('['), byte(']')
		if n.kind == 'o' {
			open, closer = '{', '}'
		}
		b = append(b, open)
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ',')
			}
			ws()
			if n.kind == 'o' {
				b = renderString(rng, b, n.keys[i], escapes && rng.IntN(8) == 0)
				ws()
				b = append(b, ':')
				ws()
			}
			b = render(rng, b, v, spaced, escapes)
			ws()
		}
		return append(b, closer)
	case 's':
		return renderString(rng, b, n.text, escapes)
	}
	return append(b, n.text...)
}

func renderString(rng *rand.Rand, b []byte, s string, escapes bool) []byte {
	if !escapes {
		j, _ := json.Marshal(s)
		return append(b, j...)
	}
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '/' && rng.IntN(2) == 0:
			b = append(b, `\/`...)
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20 || rng.IntN(4) == 0:
			if r > 0xFFFF {
				r1, r2 := r-0x10000>>10+0xD800, (r-0x10000)&0x3FF+0xDC00
				b = fmt.Appendf(b, `\u%04X\u%04x`, r1, r2)
			} else {
				b = fmt.Appendf(b, `\u%04x`, r)
			}
		default:
			b = append(b, string(r)...)
		}
	}
	return append(b, '"')
}
