package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/anthropic"
	"github.com/mindrouter/mindrouter/plugins/ollama"
	"github.com/mindrouter/mindrouter/plugins/ollamaapi"
	"github.com/mindrouter/mindrouter/plugins/openai"
	"github.com/mindrouter/mindrouter/plugins/responses"
	"github.com/mindrouter/mindrouter/plugins/vllm"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
	"github.com/mindrouter/mindrouter/sdk/shape"
)

// Test-only components that speak canonical JSON, so the golden vectors
// kept in canonical form (the adapters' canonical requests, the
// translator's canonical responses and chunks) run through the fused ops
// too: canonT "decodes" a canonical request, canonA "decodes" a canonical
// response or one canonical chunk per event ("[DONE]" ends the stream).
const (
	CanonT uint16 = Responses + 1
	CanonA uint16 = Responses + 2
)

type canonTranslator struct{ sdk.Unimplemented }

func (canonTranslator) DecodeRequest(c *sdk.Call, body []byte, req *canon.ChatRequest) error {
	if err := req.DecodeJSON(body); err != nil {
		return sdk.BadInput(err.Error())
	}
	return nil
}

type canonAdapter struct{ sdk.Unimplemented }

func (canonAdapter) DecodeResponse(c *sdk.Call, body []byte, resp *canon.ChatResponse) error {
	if err := resp.DecodeJSON(body); err != nil {
		return sdk.BadInput(err.Error())
	}
	return nil
}

func (canonAdapter) DecodeStream(c *sdk.Call, st *sdk.State, events [][]byte, chunks *[]canon.ChatChunk) error {
	for _, ev := range events {
		if string(ev) == "[DONE]" {
			c.Done()
			continue
		}
		*chunks = append(*chunks, canon.ChatChunk{})
		if err := (*chunks)[len(*chunks)-1].DecodeJSON(ev); err != nil {
			return sdk.BadInput(err.Error())
		}
	}
	return nil
}

func canonTPart() sdk.Component {
	return sdk.TranslatorPart(sdk.Manifest{Name: "canon-t", Version: "0", Format: "canonical"}, canonTranslator{})
}

func canonAPart() sdk.Component {
	return sdk.AdapterPart(sdk.Manifest{Name: "canon-a", Version: "0", Format: "canonical"}, canonAdapter{})
}

// testBundle is the first-party bundle plus the canonical test components.
func testBundle() *sdk.Plugin {
	return sdk.NewBundle(Name, Version, append(Parts(), canonTPart(), canonAPart())...)
}

// singles are the components as separate modules of one component each,
// as the gateway runs them today, by bundle index.
func singles() map[uint16]*sdk.Plugin {
	return map[uint16]*sdk.Plugin{
		OpenAI:    sdk.NewTranslator(openai.Manifest(), openai.New()),
		VLLM:      sdk.NewAdapter(vllm.Manifest(), vllm.New()),
		Ollama:    sdk.NewAdapter(ollama.Manifest(), ollama.New()),
		Anthropic: sdk.NewTranslator(anthropic.Manifest(), anthropic.New()),
		OllamaAPI: sdk.NewTranslator(ollamaapi.Manifest(), ollamaapi.New()),
		Responses: sdk.NewTranslator(responses.Manifest(), responses.New()),
		CanonT:    sdk.NewTranslator(canonTPart().Manifest(), canonTranslator{}),
		CanonA:    sdk.NewAdapter(canonAPart().Manifest(), canonAdapter{}),
	}
}

var names = map[uint16]string{OpenAI: "openai", VLLM: "vllm", Ollama: "ollama", Anthropic: "anthropic", OllamaAPI: "ollama-api",
	Responses: "openai-responses", CanonT: "canonT", CanonA: "canonA"}

// res is an abi.Result copied out of the plugin's buffer, its meta as a map.
type res struct {
	Status  abi.Status
	Flags   uint32
	State   []byte
	Meta    map[string]string
	Payload []byte
	Error   string
}

func (r res) ok() bool { return r.Status == abi.StatusOK }

// input lays out a call as the host does.
func input(ti, ai uint16, flags uint32, state, meta, payload []byte) []byte {
	in := make([]byte, abi.HeaderSize, abi.HeaderSize+len(state)+len(meta)+len(payload))
	abi.PutHeader(in, abi.Header{Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(meta)),
		PayloadLen: uint32(len(payload)), Translator: ti, Adapter: ai, RequestID: 77})
	return append(append(append(in, state...), meta...), payload...)
}

func parse(t testing.TB, area []byte) res {
	t.Helper()
	r, err := abi.ParseResult(area)
	if err != nil {
		t.Fatalf("malformed result: %v", err)
	}
	m := map[string]string{}
	for mm := r.Meta; len(mm) > 0; {
		k, v, rest, err := abi.NextMeta(mm)
		if err != nil {
			t.Fatalf("malformed meta: %v", err)
		}
		if _, dup := m[string(k)]; dup {
			t.Fatalf("meta key %q twice", k)
		}
		m[string(k)] = string(v)
		mm = rest
	}
	return res{r.Status, r.Flags, bytes.Clone(r.State), m, bytes.Clone(r.Payload), string(r.Error)}
}

func do(t testing.TB, p *sdk.Plugin, op abi.Op, in []byte) res {
	t.Helper()
	return parse(t, p.Call(op, in))
}

// merge is the union of the meta of two calls, which must agree on keys
// they share.
func merge(t testing.TB, a, b map[string]string) map[string]string {
	t.Helper()
	m := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		if w, ok := m[k]; ok && w != v {
			t.Fatalf("meta %s: %q then %q", k, w, v)
		}
		m[k] = v
	}
	return m
}

func metaString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b []byte
	for _, k := range keys {
		b = fmt.Appendf(b, "%s=%q ", k, m[k])
	}
	return string(b)
}

func metaList(kv ...string) []byte {
	var m []byte
	for i := 0; i+1 < len(kv); i += 2 {
		m = abi.AppendMeta(m, kv[i], kv[i+1])
	}
	return m
}

func list(items [][]byte) []byte {
	var b []byte
	for _, it := range items {
		b = abi.AppendItem(b, it)
	}
	return b
}

// step is what one relay step sent to the client and told the host.
type step struct {
	out  []byte
	meta map[string]string
	done bool
}

// relay drives one stream as the gateway's relay (core/server/relay.go)
// does: a step per batch, FlagFirst on the first decode call, FlagEnd on the
// end call, encode only when the decode gave chunks or at the end, with the
// translator's own FlagFirst; it stops decoding after the backend's end
// marker and then makes the end call. Unfused it runs stream_decode on ad
// and stream_encode on tr (header indexes ti and ai); fused, one
// fused_stream call on fp, after translating the batch's leading events
// that match the stream shape the last call left (sdk/shape) as the host
// does: their output first, their output estimate added to the call's,
// and no call at all when every event matched.
type relay struct {
	t              testing.TB
	tr, ad, fp     *sdk.Plugin
	ti, ai         uint16
	meta           []byte
	astate, tstate []byte
	fstate         []byte
	shape          shape.Shape
	shapeBuf       []byte
	shaped         int // events the shape translated
	aFirst, tFirst bool
	done           bool
	steps          []step
	fail           *res
}

func unfusedRelay(t testing.TB, tr, ad *sdk.Plugin, ti, ai uint16, meta []byte) *relay {
	return &relay{t: t, tr: tr, ad: ad, ti: ti, ai: ai, meta: meta, aFirst: true, tFirst: true}
}

func fusedRelay(t testing.TB, p *sdk.Plugin, ti, ai uint16, meta []byte) *relay {
	return &relay{t: t, fp: p, ti: ti, ai: ai, meta: meta, aFirst: true, tFirst: true}
}

func flags(first, end bool) uint32 {
	var f uint32
	if first {
		f |= abi.FlagFirst
	}
	if end {
		f |= abi.FlagEnd
	}
	return f
}

// run runs every batch, then the end call.
func (r *relay) run(batches [][][]byte) *relay {
	for i := 0; i <= len(batches); i++ {
		r.step(batches, i)
	}
	return r
}

// step runs batches[i], or the end call when i is len(batches).
func (r *relay) step(batches [][][]byte, i int) {
	end := i == len(batches)
	if r.fail != nil || !end && r.done {
		return
	}
	var events [][]byte
	if !end {
		events = batches[i]
	}
	if r.fp != nil {
		var out []byte
		tokens := 0
		if !end && r.shape.Valid() {
			var k int
			out, _, k, tokens = r.shape.ApplyList(nil, list(events))
			r.shaped += k
			if events = events[k:]; k > 0 && len(events) == 0 {
				r.steps = append(r.steps, step{out, map[string]string{abi.MetaOutputTokens: fmt.Sprint(tokens)}, false})
				return
			}
		}
		f := do(r.t, r.fp, abi.OpFusedStream, input(r.ti, r.ai, flags(r.aFirst, end), r.fstate, r.meta, list(events)))
		if !f.ok() {
			r.fail = &f
			return
		}
		r.shape.Reset()
		if v, ok := f.Meta[abi.MetaStreamShape]; ok {
			delete(f.Meta, abi.MetaStreamShape)
			if err := r.shape.Parse([]byte(v)); err != nil {
				r.t.Fatalf("a stream shape the host refuses: %v", err)
			}
			r.shapeBuf = r.shape.Clone(r.shapeBuf)
		}
		if tokens > 0 {
			n := 0
			fmt.Sscan(f.Meta[abi.MetaOutputTokens], &n)
			f.Meta[abi.MetaOutputTokens] = fmt.Sprint(n + tokens)
		}
		f.Payload = append(out, f.Payload...)
		r.aFirst = false
		if f.Flags&abi.ResultStateKeep == 0 {
			r.fstate = f.State
		}
		done := f.Flags&abi.ResultStreamDone != 0
		r.done = r.done || done
		r.steps = append(r.steps, step{f.Payload, f.Meta, done})
		return
	}
	dec := do(r.t, r.ad, abi.OpStreamDecode, input(r.ti, r.ai, flags(r.aFirst, end), r.astate, nil, list(events)))
	if !dec.ok() {
		r.fail = &dec
		return
	}
	r.aFirst = false
	if dec.Flags&abi.ResultStateKeep == 0 {
		r.astate = dec.State
	}
	done := dec.Flags&abi.ResultStreamDone != 0
	r.done = r.done || done
	if len(dec.Payload) == 0 && !end {
		r.steps = append(r.steps, step{nil, dec.Meta, done})
		return
	}
	enc := do(r.t, r.tr, abi.OpStreamEncode, input(r.ti, r.ai, flags(r.tFirst, end), r.tstate, r.meta, dec.Payload))
	if !enc.ok() {
		r.fail = &enc
		return
	}
	r.tFirst = false
	if enc.Flags&abi.ResultStateKeep == 0 {
		r.tstate = enc.State
	}
	r.steps = append(r.steps, step{enc.Payload, merge(r.t, dec.Meta, enc.Meta), done})
}

// diff describes how two relays' results differ, or returns "".
func (r *relay) diff(o *relay) string {
	if (r.fail == nil) != (o.fail == nil) || r.fail != nil && (r.fail.Status != o.fail.Status || r.fail.Error != o.fail.Error) {
		return fmt.Sprintf("failures differ: %+v vs %+v", r.fail, o.fail)
	}
	if len(r.steps) != len(o.steps) {
		return fmt.Sprintf("%d steps vs %d", len(r.steps), len(o.steps))
	}
	for i := range r.steps {
		a, b := r.steps[i], o.steps[i]
		if !bytes.Equal(a.out, b.out) {
			return fmt.Sprintf("step %d bytes:\n%q\nvs\n%q", i, a.out, b.out)
		}
		if metaString(a.meta) != metaString(b.meta) || a.done != b.done {
			return fmt.Sprintf("step %d meta %s done %v vs %s done %v", i, metaString(a.meta), a.done, metaString(b.meta), b.done)
		}
	}
	return ""
}

func (r *relay) output() []byte {
	var b []byte
	for _, s := range r.steps {
		b = append(b, s.out...)
	}
	return b
}

// splits returns the ways a stream's events are cut into batches: all in
// one, one per event, and random cuts that include empty batches.
func splits(rng *rand.Rand, events [][]byte, random int) [][][][]byte {
	out := [][][][]byte{{events}}
	var one [][][]byte
	for _, e := range events {
		one = append(one, [][]byte{e})
	}
	out = append(out, one)
	for range random {
		var b [][][]byte
		rest := events
		for len(rest) > 0 {
			n := rng.IntN(min(len(rest), 5) + 1) // 0 is an empty batch
			b = append(b, rest[:n])
			rest = rest[n:]
		}
		out = append(out, b)
	}
	return out
}

// frameSSE splits an SSE body into data payloads (data lines joined by
// "\n", comments dropped), as the host's framer does (sdktest.SSEEvents).
func frameSSE(b []byte) [][]byte { return sdktest.SSEEvents(b) }

// frameNDJSON splits NDJSON into its non-blank lines (sdktest.NDJSONLines).
func frameNDJSON(b []byte) [][]byte { return sdktest.NDJSONLines(b) }

// compactItems turns a JSON array file into one compact JSON item per
// element.
func compactItems(t testing.TB, raw []byte) [][]byte {
	t.Helper()
	var arr []json.RawMessage
	if err := json.Unmarshal(raw, &arr); err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(arr))
	for i, a := range arr {
		var buf bytes.Buffer
		if err := json.Compact(&buf, a); err != nil {
			t.Fatal(err)
		}
		out[i] = buf.Bytes()
	}
	return out
}

// glob lists ../<plugin>/testdata/<pattern>, sorted.
func glob(t testing.TB, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join("..", pattern))
	if err != nil || len(m) == 0 {
		t.Fatalf("no files match %s (%v)", pattern, err)
	}
	sort.Strings(m)
	return m
}

func read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
