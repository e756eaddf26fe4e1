// Package sdktest is the test kit for MindRouter plugin authors: it drives
// a plugin natively (sdk.NewTranslator, sdk.NewAdapter, sdk.NewBundle)
// through the same ABI entry point the WebAssembly exports use, so a
// plugin's unit tests see exactly what the gateway sees.
//
//	func TestDecode(t *testing.T) {
//		h := sdktest.New(t, sdk.NewTranslator(mydialect.Manifest(), mydialect.New()))
//		req := h.DecodeRequest([]byte(`{"model":"m","prompt":"hi"}`))
//		out := h.EncodeResponse(canon.ChatResponse{...})
//		sdktest.Golden(t, "testdata/response.json", out)
//	}
//
// Call runs any op with any input (Payload, Items, Meta, Flags, State) and
// returns a copied Result; the typed helpers (DecodeRequest,
// EncodeResponse, EncodeStream, DecodeStream, ...) build the canonical
// input, fill the meta the host would send, fail the test on a status
// other than ok, and decode canonical output. Golden compares output with
// a file (rewritten under -update), SplitInvariant checks that a stream's
// output does not depend on how it is cut into calls, and FuzzOp fuzzes an
// op, requiring ok or bad_input for every input.
//
// For authors of the first-party plugins' test helpers: call and callOp
// are Harness.Call; runStream and streamABI are Stream, EncodeStream and
// DecodeStream; golden and goldenJSON are Golden (key order is kept, not
// ignored); frameSSE and readSSE are SSEEvents; items is SplitItems; the
// split loops are SplitInvariant.
//
// The gateway's own conformance kit (mindrouter plugin check) runs the
// built .wasm through the production loader; sdktest is for the fast
// native loop before that.
package sdktest

import (
	"bytes"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// Defaults the typed helpers send as the host would (unless a Meta option
// gives the key): the gateway's response identity on encode ops.
const (
	DefaultID      = "req-sdktest"
	DefaultModel   = "test-model"
	DefaultCreated = "1700000000"
)

// Harness drives one plugin. Like the plugin, it is not safe for
// concurrent use.
type Harness struct {
	tb testing.TB
	p  *sdk.Plugin
	m  sdk.Manifest
	// Translator and Adapter are the component indexes every call names
	// in its header (0 and 0 in a module of one component).
	Translator, Adapter uint16
}

// New returns a Harness for p.
func New(tb testing.TB, p *sdk.Plugin) *Harness {
	return &Harness{tb: tb, p: p, m: p.Manifest()}
}

// Pair returns a Harness on the same plugin whose calls name the bundle
// components called translator and adapter ("" keeps the current index),
// for the fused ops (abi.OpFusedRequest, ...) and per-component tests. It
// fails the test when the bundle has no such component.
func (h *Harness) Pair(translator, adapter string) *Harness {
	h.tb.Helper()
	c := *h
	for _, x := range []struct {
		name string
		kind sdk.Kind
		idx  *uint16
	}{{translator, sdk.KindTranslator, &c.Translator}, {adapter, sdk.KindAdapter, &c.Adapter}} {
		if x.name == "" {
			continue
		}
		i, m, ok := h.m.PartNamed(x.name)
		if !ok || m.Kind != x.kind {
			h.tb.Fatalf("sdktest: the plugin has no %s component named %q", x.kind, x.name)
		}
		*x.idx = i
	}
	return &c
}

// Plugin returns the plugin under test.
func (h *Harness) Plugin() *sdk.Plugin { return h.p }

// Result is a call's result, copied out of the plugin's result area
// (which the next call reuses).
type Result struct {
	Status abi.Status
	Flags  uint32
	// State is the new state blob; nil with abi.ResultStateKeep set.
	State []byte
	// Meta has the first value of each key; RawMeta is the whole list.
	Meta    map[string]string
	RawMeta []byte
	Payload []byte
	Error   string
}

// OK reports whether the status is ok.
func (r Result) OK() bool { return r.Status == abi.StatusOK }

// Items splits a list payload (stream_decode's chunks) into its items.
func (r Result) Items() ([][]byte, error) { return SplitItems(r.Payload) }

// Option sets part of a call's input.
type Option func(*input)

type input struct {
	flags   uint32
	state   []byte
	meta    []byte
	keys    map[string]bool // keys the caller set
	payload []byte
	comps   *[2]uint16
	noDflt  bool
}

// Payload sets the call's payload (a body, canonical JSON, ...).
func Payload(b []byte) Option { return func(in *input) { in.payload = b } }

// Items sets a list payload: each item u32-length-prefixed (stream ops).
func Items(items ...[]byte) Option {
	return func(in *input) {
		var b []byte
		for _, it := range items {
			b = abi.AppendItem(b, it)
		}
		in.payload = b
	}
}

// Meta adds meta pairs: key, value, key, value, ... A key given here
// replaces the helper's default for it.
func Meta(kv ...string) Option {
	return func(in *input) {
		for i := 0; i+1 < len(kv); i += 2 {
			in.meta = abi.AppendMeta(in.meta, kv[i], kv[i+1])
			in.keys[kv[i]] = true
		}
	}
}

// Image adds one fetched image as the host sends it after a
// StatusNeedImages (abi.MetaImage).
func Image(url, mediaType, b64 string) Option {
	return func(in *input) { in.meta = abi.AppendImage(in.meta, url, mediaType, b64) }
}

// Flags sets the call flags (abi.FlagFirst, abi.FlagEnd).
func Flags(f uint32) Option { return func(in *input) { in.flags = f } }

// State sets the stream state blob handed to the call.
func State(b []byte) Option { return func(in *input) { in.state = b } }

// Components addresses the call to these component indexes (a bundle),
// overriding the Harness's.
func Components(translator, adapter uint16) Option {
	return func(in *input) { in.comps = &[2]uint16{translator, adapter} }
}

// NoDefaults sends only the meta the options give: no route, kind, id,
// model or created filled in.
func NoDefaults() Option { return func(in *input) { in.noDflt = true } }

// Call runs op with the input the options describe, laid out as the host
// lays it out, and returns a copy of the result. The meta the host always
// sends for op is filled in unless given (see defaultMeta). A status
// other than ok is returned, not failed on; a malformed result area fails
// the test.
func (h *Harness) Call(op abi.Op, opts ...Option) Result {
	h.tb.Helper()
	in := input{keys: map[string]bool{}}
	for _, o := range opts {
		o(&in)
	}
	meta := in.meta
	if !in.noDflt {
		meta = h.defaultMeta(op, meta, in.keys)
	}
	tr, ad := h.Translator, h.Adapter
	if in.comps != nil {
		tr, ad = in.comps[0], in.comps[1]
	}
	buf := make([]byte, abi.HeaderSize, abi.HeaderSize+len(in.state)+len(meta)+len(in.payload))
	abi.PutHeader(buf, abi.Header{
		Flags: in.flags, StateLen: uint32(len(in.state)), MetaLen: uint32(len(meta)),
		PayloadLen: uint32(len(in.payload)), Translator: tr, Adapter: ad, RequestID: 1,
	})
	buf = append(append(append(buf, in.state...), meta...), in.payload...)
	r, err := abi.ParseResult(h.p.Call(op, buf))
	if err != nil {
		h.tb.Fatalf("%s: malformed result: %v", op, err)
	}
	res := Result{
		Status: r.Status, Flags: r.Flags, Error: string(r.Error),
		RawMeta: bytes.Clone(r.Meta), Payload: bytes.Clone(r.Payload),
		Meta: map[string]string{},
	}
	if r.Flags&abi.ResultStateKeep == 0 {
		res.State = bytes.Clone(r.State)
		if res.State == nil {
			res.State = []byte{}
		}
	}
	for m := r.Meta; len(m) > 0; {
		k, v, rest, err := abi.NextMeta(m)
		if err != nil {
			h.tb.Fatalf("%s: malformed result meta: %v", op, err)
		}
		if _, dup := res.Meta[string(k)]; !dup {
			res.Meta[string(k)] = string(v)
		}
		m = rest
	}
	return res
}

// defaultMeta appends the meta the host sends with op, for the keys the
// caller did not give: every translator op gets MetaRoute and MetaKind
// (the manifest's first route of the op's endpoint kind), encode ops of
// responses and streams get MetaID, MetaModel and MetaCreated,
// error_decode gets MetaStatus 500, probe_decode the manifest's first
// probe and MetaStatus 200.
func (h *Harness) defaultMeta(op abi.Op, meta []byte, given map[string]bool) []byte {
	add := func(k, v string) {
		if !given[k] && v != "" {
			meta = abi.AppendMeta(meta, k, v)
		}
	}
	switch op {
	case abi.OpRequestDecode, abi.OpResponseEncode, abi.OpStreamEncode, abi.OpErrorEncode,
		abi.OpModelsEncode, abi.OpEmbedRequestDecode, abi.OpEmbedResponseEncode,
		abi.OpFusedRequest, abi.OpFusedResponse, abi.OpFusedStream:
		kind := sdk.EndpointChat
		switch op {
		case abi.OpModelsEncode:
			kind = sdk.EndpointModels
		case abi.OpEmbedRequestDecode, abi.OpEmbedResponseEncode:
			kind = sdk.EndpointEmbedding
		}
		if m, ok := h.m.Part(h.Translator); ok {
			for _, r := range m.Routes {
				if r.EndpointKind() == kind {
					add(abi.MetaRoute, r.Name)
					add(abi.MetaKind, string(kind))
					break
				}
			}
		}
	}
	switch op {
	case abi.OpResponseEncode, abi.OpStreamEncode, abi.OpEmbedResponseEncode,
		abi.OpFusedResponse, abi.OpFusedStream:
		add(abi.MetaID, DefaultID)
		add(abi.MetaModel, DefaultModel)
		add(abi.MetaCreated, DefaultCreated)
	case abi.OpErrorDecode:
		add(abi.MetaStatus, "500")
	case abi.OpProbeDecode:
		if m, ok := h.m.Part(h.Adapter); ok && len(m.Probes) > 0 {
			add(abi.MetaProbe, m.Probes[0].Name)
		}
		add(abi.MetaStatus, "200")
	}
	return meta
}

// SplitItems splits a list payload into its items.
func SplitItems(list []byte) ([][]byte, error) {
	var out [][]byte
	for {
		item, rest, ok, err := abi.NextItem(list)
		if err != nil || !ok {
			return out, err
		}
		out = append(out, item)
		list = rest
	}
}
