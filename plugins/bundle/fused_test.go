package bundle

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/anthropic"
	"github.com/mindrouter/mindrouter/plugins/ollamaapi"
	"github.com/mindrouter/mindrouter/plugins/openai"
	"github.com/mindrouter/mindrouter/plugins/responses"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// The fused ops must give exactly what the canonical path gives: the same
// status, error, bytes, result flags and meta (as a key/value set, the
// union of the two unfused calls' meta), for every golden vector the
// plugins keep and every client dialect × engine pair.

var routeMeta = []string{abi.MetaRoute, openai.RouteChat, abi.MetaKind, string(sdk.EndpointChat)}

var headerMeta = append(append([]string{}, routeMeta...),
	abi.MetaID, "chatcmpl-bundle1", abi.MetaModel, "served-model", abi.MetaCreated, "1700000000")

// translatorRoutes are the chat routes of each translator the response and
// stream vectors run through (Ollama's API has two, chat and generate).
var translatorRoutes = []struct {
	ti    uint16
	route string
}{{OpenAI, openai.RouteChat}, {OpenAI, openai.RouteCompletions}, {Anthropic, anthropic.RouteMessages},
	{OllamaAPI, ollamaapi.RouteChat}, {OllamaAPI, ollamaapi.RouteGenerate}, {Responses, responses.RouteResponses}}

// routeMetaOf is the host's route meta for a request vector: the
// translator's chat route (Ollama's generate for its generate goldens).
func routeMetaOf(v vec) []string {
	switch {
	case v.ti == Anthropic:
		return []string{abi.MetaRoute, anthropic.RouteMessages, abi.MetaKind, string(sdk.EndpointChat)}
	case v.ti == OpenAI && strings.HasPrefix(v.name, "completion"):
		return []string{abi.MetaRoute, openai.RouteCompletions, abi.MetaKind, string(sdk.EndpointChat)}
	case v.ti == OllamaAPI && strings.Contains(filepath.Base(v.name), "generate"):
		return []string{abi.MetaRoute, ollamaapi.RouteGenerate, abi.MetaKind, string(sdk.EndpointChat)}
	case v.ti == Responses:
		return []string{abi.MetaRoute, responses.RouteResponses, abi.MetaKind, string(sdk.EndpointResponses)}
	}
	return routeMeta
}

// withRoute replaces the route of a meta list (key, value, ...).
func withRoute(meta []string, route string) []string {
	out := append([]string{}, meta...)
	for i := 0; i+1 < len(out); i += 2 {
		if out[i] == abi.MetaRoute {
			out[i+1] = route
		}
	}
	return out
}

type vec struct {
	name   string
	ti, ai uint16
	body   []byte
	events [][]byte
	meta   []string // stream vectors: the encode meta
}

// requestVectors are client request bodies for the openai translator (its
// golden requests, and vLLM's golden bodies, which are OpenAI requests too,
// plus bad ones) and canonical requests for canonT (the golden canonical
// requests of openai and ollama).
func requestVectors(t testing.TB) []vec {
	var vs []vec
	for _, f := range glob(t, "openai/testdata/requests/*.req.json") {
		vs = append(vs, vec{name: f, ti: OpenAI, body: read(t, f)})
	}
	for _, f := range glob(t, "vllm/testdata/requests/*.json") {
		vs = append(vs, vec{name: f, ti: OpenAI, body: read(t, f)})
	}
	for _, f := range glob(t, "anthropic/testdata/requests/*.req.json") {
		vs = append(vs, vec{name: f, ti: Anthropic, body: read(t, f)})
	}
	for _, f := range glob(t, "ollamaapi/testdata/requests/*.req.json") {
		vs = append(vs, vec{name: f, ti: OllamaAPI, body: read(t, f)})
	}
	for _, f := range glob(t, "responses/testdata/requests/*.req.json") {
		vs = append(vs, vec{name: f, ti: Responses, body: read(t, f)})
	}
	for _, f := range append(glob(t, "openai/testdata/requests/*.canon.json"), glob(t, "ollama/testdata/request/*.canon.json")...) {
		vs = append(vs, vec{name: f, ti: CanonT, body: read(t, f)})
	}
	for i, b := range []string{`{"model":"m","messages":[],"n":2}`, `not json`, `{}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":-1}`} {
		vs = append(vs, vec{name: "bad request " + string(rune('a'+i)), ti: OpenAI, body: []byte(b)})
	}
	vs = append(vs, vec{name: "bad canonical request", ti: CanonT, body: []byte(`[1]`)})
	for i, b := range []string{`{"model":"m","prompt":"Once upon a time","max_tokens":16,"temperature":0.2,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","prompt":["a","b"],"n":2,"logprobs":1,"stop":["\n"]}`, `{"model":"m","prompt":[1,2]}`, `{"model":"m","messages":[]}`} {
		vs = append(vs, vec{name: "completion " + string(rune('a'+i)), ti: OpenAI, body: []byte(b)})
	}
	return vs
}

// responseVectors are backend response bodies: vLLM's goldens and the
// OpenAI translator's (vLLM answers in OpenAI's format), Ollama's, and
// canonical responses for canonA.
func responseVectors(t testing.TB) []vec {
	var vs []vec
	for _, f := range glob(t, "vllm/testdata/responses/*.json") {
		vs = append(vs, vec{name: f, ai: VLLM, body: read(t, f)})
	}
	for _, f := range glob(t, "openai/testdata/responses/*.json") {
		if !strings.HasSuffix(f, ".canon.json") {
			vs = append(vs, vec{name: f, ai: VLLM, body: read(t, f)})
		}
	}
	for _, f := range glob(t, "vllm/testdata/completions/*.json") {
		vs = append(vs, vec{name: f, ai: VLLM, body: read(t, f)})
	}
	for _, f := range append(glob(t, "ollama/testdata/response/*.ollama.json"), glob(t, "ollama/testdata/generate/*.ollama.json")...) {
		vs = append(vs, vec{name: f, ai: Ollama, body: read(t, f)})
	}
	for _, f := range append(glob(t, "openai/testdata/responses/*.canon.json"), glob(t, "ollama/testdata/response/*.canon.json")...) {
		vs = append(vs, vec{name: f, ai: CanonA, body: read(t, f)})
	}
	for _, ai := range []uint16{VLLM, Ollama, CanonA} {
		vs = append(vs, vec{name: "bad response " + names[ai], ai: ai, body: []byte(`{"choices":`)})
	}
	return vs
}

// streamVectors are recorded backend streams: vLLM's SSE goldens and the
// OpenAI translator's (the same format), Ollama's NDJSON, and canonical
// chunk lists for canonA (openai's stream cases with their meta, Ollama's
// decoded goldens).
func streamVectors(t testing.TB) []vec {
	var vs []vec
	for _, f := range append(append(glob(t, "vllm/testdata/streams/*.sse"), glob(t, "openai/testdata/streams/*.sse")...), glob(t, "vllm/testdata/completions/*.sse")...) {
		vs = append(vs, vec{name: f, ai: VLLM, events: frameSSE(read(t, f))})
	}
	for _, f := range append(glob(t, "ollama/testdata/stream/*.ndjson"), glob(t, "ollama/testdata/generate/*.ndjson")...) {
		vs = append(vs, vec{name: f, ai: Ollama, events: frameNDJSON(read(t, f))})
	}
	for _, f := range glob(t, "openai/testdata/streams/*.json") {
		var sc struct {
			Meta   []string          `json:"meta"`
			Chunks []json.RawMessage `json:"chunks"`
		}
		if err := json.Unmarshal(read(t, f), &sc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		raw, _ := json.Marshal(sc.Chunks)
		vs = append(vs, vec{name: f, ai: CanonA, events: append(compactItems(t, raw), []byte("[DONE]")), meta: sc.Meta})
	}
	for _, f := range glob(t, "ollama/testdata/stream/*.chunks.json") {
		vs = append(vs, vec{name: f, ai: CanonA, events: append(compactItems(t, read(t, f)), []byte("[DONE]"))})
	}
	vs = append(vs, vec{name: "bad vllm stream", ai: VLLM, events: [][]byte{[]byte(`{"choices":[{"delta":{"content":"a"}}]}`), []byte(`{"choices":`), []byte("[DONE]")}})
	vs = append(vs, vec{name: "bad ollama stream", ai: Ollama, events: [][]byte{[]byte(`{"message":{"content":"a"},"done":false}`), []byte(`{`)}})
	return vs
}

func same(t *testing.T, name string, got, want res) {
	t.Helper()
	if got.Status != want.Status || got.Error != want.Error || got.Flags != want.Flags || !bytes.Equal(got.State, want.State) ||
		!bytes.Equal(got.Payload, want.Payload) || metaString(got.Meta) != metaString(want.Meta) {
		t.Errorf("%s: fused and canonical paths differ\nfused:     %s %q flags %b meta %s\n%s\ncanonical: %s %q flags %b meta %s\n%s",
			name, got.Status, got.Error, got.Flags, metaString(got.Meta), got.Payload,
			want.Status, want.Error, want.Flags, metaString(want.Meta), want.Payload)
	}
}

func TestFusedRequest_MatchesCanonical(t *testing.T) {
	p, s := testBundle(), singles()
	n, failed := 0, 0
	for _, v := range requestVectors(t) {
		for _, ai := range []uint16{VLLM, Ollama} {
			for _, ctx := range []string{"", "32768"} {
				var ctxMeta []string
				if ctx != "" {
					ctxMeta = []string{abi.MetaContextLength, ctx}
				}
				name := v.name + " × " + names[ai] + " ctx=" + ctx
				// The host's fused meta: the route's, then the context length.
				rm := routeMetaOf(v)
				got := do(t, p, abi.OpFusedRequest, input(v.ti, ai, 0, nil, metaList(append(append([]string{}, rm...), ctxMeta...)...), v.body))
				want := do(t, s[v.ti], abi.OpRequestDecode, input(0, 0, 0, nil, metaList(rm...), v.body))
				if want.ok() {
					enc := do(t, s[ai], abi.OpRequestEncode, input(0, 0, 0, nil, metaList(ctxMeta...), want.Payload))
					if enc.ok() {
						enc.Meta = merge(t, want.Meta, enc.Meta)
					}
					want = enc
				}
				same(t, name, got, want)
				n++
				if !got.ok() {
					failed++
				}
			}
		}
	}
	t.Logf("%d request cases (%d of them errors)", n, failed)
	if failed == n {
		t.Fatal("every request failed")
	}
}

func TestFusedResponse_MatchesCanonical(t *testing.T) {
	p, s := testBundle(), singles()
	n := 0
	for _, v := range responseVectors(t) {
		for _, tr := range translatorRoutes {
			meta := metaList(withRoute(headerMeta, tr.route)...)
			got := do(t, p, abi.OpFusedResponse, input(tr.ti, v.ai, 0, nil, meta, v.body))
			want := do(t, s[v.ai], abi.OpResponseDecode, input(0, 0, 0, nil, nil, v.body))
			if want.ok() {
				enc := do(t, s[tr.ti], abi.OpResponseEncode, input(0, 0, 0, nil, meta, want.Payload))
				if enc.ok() {
					enc.Meta = merge(t, want.Meta, enc.Meta)
				}
				want = enc
			}
			checkResponseShape(t, v.name, got, v.body)
			same(t, v.name+" × "+names[tr.ti]+" "+tr.route, got, want)
			n++
		}
	}
	t.Logf("%d response cases", n)
}

func TestFusedStream_MatchesCanonical(t *testing.T) {
	p, s := testBundle(), singles()
	rng := rand.New(rand.NewPCG(7, 11))
	vectors, runs, shaped := 0, 0, 0
	for _, v := range streamVectors(t) {
		metas := [][]string{v.meta, append([]string{abi.MetaIncludeUsage, "1"}, v.meta...)}
		if v.meta != nil {
			metas = metas[:1] // the case says what the client asked for
		}
		for k, extra := range metas {
			// Every translator route in turn, one per variant and vector.
			tr := translatorRoutes[(vectors+k)%len(translatorRoutes)]
			meta := metaList(append(withRoute(headerMeta, tr.route), extra...)...)
			vectors++
			cuts := splits(rng, v.events, 6)
			// The translator's first call after the adapter's: an empty batch first.
			lead := [][][]byte{nil}
			for _, e := range v.events {
				lead = append(lead, [][]byte{e})
			}
			cuts = append(cuts, lead)
			var whole []byte
			for i, batches := range cuts {
				want := unfusedRelay(t, s[tr.ti], s[v.ai], 0, 0, meta).run(batches)
				got := fusedRelay(t, p, tr.ti, v.ai, meta).run(batches)
				shaped += got.shaped
				if d := got.diff(want); d != "" {
					t.Fatalf("%s × %s %s %s, split %d (%d batches): %s", v.name, names[tr.ti], tr.route, extra, i, len(batches), d)
				}
				if want.fail == nil {
					// Where batches go must not change the client's bytes.
					if i == 0 {
						whole = want.output()
					} else if !bytes.Equal(want.output(), whole) {
						t.Errorf("%s split %d: bytes differ from the single-batch run", v.name, i)
					}
				}
				runs++
			}
		}
	}
	t.Logf("%d stream cases × splits = %d runs; %d events by stream shapes", vectors, runs, shaped)
	if shaped == 0 {
		t.Error("no event was translated by a stream shape")
	}
}

// Pooled instances serve any call: interleaving fused and unfused calls of
// different streams on one bundle must not leak state between them.
func TestFused_Interleaved(t *testing.T) {
	p, s := testBundle(), singles()
	meta := metaList(append(append([]string{}, headerMeta...), abi.MetaIncludeUsage, "1")...)
	a := frameSSE(read(t, filepath.Join("..", "vllm/testdata/streams/tools.sse")))
	b := frameNDJSON(read(t, filepath.Join("..", "ollama/testdata/stream/thinking.ndjson")))
	one := func(ev [][]byte) [][][]byte {
		var out [][][]byte
		for _, e := range ev {
			out = append(out, [][]byte{e})
		}
		return out
	}
	wantA := unfusedRelay(t, s[OpenAI], s[VLLM], 0, 0, meta).run(one(a))
	wantB := unfusedRelay(t, s[OpenAI], s[Ollama], 0, 0, meta).run(one(b))

	// Batch by batch: stream A through the bundle's own unfused ops (by
	// index), stream B fused, and a fused request in between.
	ra := unfusedRelay(t, p, p, OpenAI, VLLM, meta)
	rb := fusedRelay(t, p, OpenAI, Ollama, meta)
	req := read(t, filepath.Join("..", "openai/testdata/requests/tools.req.json"))
	ba, bb := one(a), one(b)
	for i := 0; i <= max(len(ba), len(bb)); i++ {
		if i <= len(ba) {
			ra.step(ba, i)
		}
		if i <= len(bb) {
			rb.step(bb, i)
		}
		if r := do(t, p, abi.OpFusedRequest, input(OpenAI, VLLM, 0, nil, metaList(routeMeta...), req)); !r.ok() {
			t.Fatalf("request: %s %s", r.Status, r.Error)
		}
	}
	if d := ra.diff(wantA); d != "" {
		t.Errorf("interleaved unfused: %s", d)
	}
	if d := rb.diff(wantB); d != "" {
		t.Errorf("interleaved fused: %s", d)
	}
}

func TestManifest(t *testing.T) {
	m := New().Manifest()
	if m.Kind != sdk.KindBundle || m.Name != "firstparty" || len(m.Components) != 6 {
		t.Fatalf("manifest %+v", m)
	}
	for i, want := range []struct {
		name string
		kind sdk.Kind
	}{{"openai", sdk.KindTranslator}, {"vllm", sdk.KindAdapter}, {"ollama", sdk.KindAdapter},
		{"anthropic", sdk.KindTranslator}, {"ollama-api", sdk.KindTranslator}, {"openai-responses", sdk.KindTranslator}} {
		if c := m.Components[i]; c.Name != want.name || c.Kind != want.kind || c.ABI != abi.Version {
			t.Errorf("component %d: %s %s", i, c.Name, c.Kind)
		}
	}
}
