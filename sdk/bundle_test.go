package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// callIdx lays out a call naming translator ti and adapter ai.
func callIdx(ti, ai uint16, flags uint32, state, meta, payload []byte) []byte {
	b := make([]byte, abi.HeaderSize)
	abi.PutHeader(b, abi.Header{Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(meta)),
		PayloadLen: uint32(len(payload)), Translator: ti, Adapter: ai, RequestID: 9})
	return append(append(append(b, state...), meta...), payload...)
}

// copied is an abi.Result copied out of the plugin's buffer.
type copied struct {
	Status  abi.Status
	Flags   uint32
	State   []byte
	Meta    map[string]string
	Payload []byte
	Error   string
}

func run(t testing.TB, p *Plugin, op abi.Op, in []byte) copied {
	t.Helper()
	r, err := abi.ParseResult(p.Call(op, in))
	if err != nil {
		t.Fatal(err)
	}
	return copied{r.Status, r.Flags, bytes.Clone(r.State), metaMap(t, r.Meta), bytes.Clone(r.Payload), string(r.Error)}
}

func metaMap(t testing.TB, m []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	for len(m) > 0 {
		k, v, rest, err := abi.NextMeta(m)
		if err != nil {
			t.Fatalf("meta: %v", err)
		}
		if _, dup := out[string(k)]; dup {
			t.Fatalf("meta key %q twice", k)
		}
		out[string(k)] = string(v)
		m = rest
	}
	return out
}

func metaList(kv ...string) []byte {
	var m []byte
	for i := 0; i+1 < len(kv); i += 2 {
		m = abi.AppendMeta(m, kv[i], kv[i+1])
	}
	return m
}

type confTranslator struct {
	fakeTranslator
	got *[]string
}

func (c confTranslator) Configure(b []byte) error {
	*c.got = append(*c.got, "t:"+string(b))
	if string(b) == "bad" {
		return errors.New("no")
	}
	return nil
}

type confAdapter struct {
	fakeAdapter
	got *[]string
}

func (c confAdapter) Configure(b []byte) error { *c.got = append(*c.got, "a:"+string(b)); return nil }

func testBundle(got *[]string) *Plugin {
	return NewBundle("fp", "2.0",
		TranslatorPart(Manifest{Name: "t", Version: "1", Format: "x", StateVersion: 3}, confTranslator{got: got}),
		AdapterPart(Manifest{Name: "a", Version: "1", Format: "y", Framing: FramingSSE}, confAdapter{got: got}),
		AdapterPart(Manifest{Name: "plain", Kind: KindTranslator}, fakeAdapter{}))
}

func TestBundle_Init(t *testing.T) {
	var got []string
	p := testBundle(&got)
	res, err := abi.ParseResult(p.Init([]byte(`{"k":1}`)))
	if err != nil || res.Status != abi.StatusOK {
		t.Fatalf("init: %v %v %s", err, res.Status, res.Error)
	}
	var m Manifest
	if err := json.Unmarshal(res.Payload, &m); err != nil {
		t.Fatal(err)
	}
	if m.Kind != KindBundle || m.Name != "fp" || m.Version != "2.0" || m.ABI != abi.Version || m.SDKVersion != Version ||
		m.GoVersion == "" || len(m.Components) != 3 {
		t.Fatalf("manifest %+v", m)
	}
	for i, want := range []struct {
		name string
		kind Kind
	}{{"t", KindTranslator}, {"a", KindAdapter}, {"plain", KindAdapter}} {
		c := m.Components[i]
		if c.Name != want.name || c.Kind != want.kind || c.ABI != abi.Version || c.SDKVersion != Version || c.GoVersion == "" {
			t.Errorf("component %d: %+v", i, c)
		}
	}
	if m.Components[0].StateVersion != 3 || m.Components[1].Framing != FramingSSE {
		t.Errorf("component fields lost: %+v", m.Components)
	}
	if fmt.Sprint(got) != `[t:{"k":1} a:{"k":1}]` {
		t.Errorf("configure calls %v", got)
	}
	if p.Manifest().Kind != KindBundle || len(p.Manifest().Components) != 3 {
		t.Errorf("Manifest() %+v", p.Manifest())
	}

	got = got[:0]
	res, _ = abi.ParseResult(p.Init(nil))
	if res.Status != abi.StatusOK || len(got) != 0 {
		t.Errorf("empty config: %v, configure calls %v", res.Status, got)
	}
	res, _ = abi.ParseResult(p.Init([]byte("bad")))
	if res.Status != abi.StatusBadInput || string(res.Error) != "configure t: no" {
		t.Errorf("bad config: %v %q", res.Status, res.Error)
	}
	// A module of one component keeps its own manifest and error text.
	single := NewTranslator(Manifest{Name: "t"}, confTranslator{got: &got})
	res, _ = abi.ParseResult(single.Init([]byte("bad")))
	if res.Status != abi.StatusBadInput || string(res.Error) != "configure: no" {
		t.Errorf("single bad config: %v %q", res.Status, res.Error)
	}
}

func TestBundle_Panics(t *testing.T) {
	for name, f := range map[string]func(){
		"empty": func() { NewBundle("b", "1") },
		"duplicate": func() {
			NewBundle("b", "1", AdapterPart(Manifest{Name: "x"}, fakeAdapter{}), TranslatorPart(Manifest{Name: "x"}, fakeTranslator{}))
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestBundle_Dispatch(t *testing.T) {
	var got []string
	p := testBundle(&got)
	events := abi.AppendItem(abi.AppendItem(nil, []byte("a")), []byte("[DONE]"))
	chunk := canon.ChatChunk{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "hi"}}}}
	chunks := abi.AppendItem(nil, chunk.AppendJSON(nil))
	cases := []struct {
		name   string
		op     abi.Op
		ti, ai uint16
		pay    []byte
		status abi.Status
		err    string
	}{
		{"translator op", abi.OpStreamEncode, 0, 7, chunks, abi.StatusOK, ""},
		{"adapter op", abi.OpStreamDecode, 7, 1, events, abi.StatusOK, ""},
		{"second adapter", abi.OpStreamDecode, 0, 2, events, abi.StatusOK, ""},
		{"translator op on an adapter", abi.OpStreamEncode, 1, 0, chunks, abi.StatusUnsupported,
			"sdk: stream_encode needs a translator; component 1 (a) is an adapter"},
		{"adapter op on a translator", abi.OpStreamDecode, 1, 0, events, abi.StatusUnsupported,
			"sdk: stream_decode needs an adapter; component 0 (t) is a translator"},
		{"translator out of range", abi.OpModelsEncode, 3, 0, nil, abi.StatusUnsupported,
			"sdk: models_encode names translator component 3; this module has 3"},
		{"adapter out of range", abi.OpProbeDecode, 0, 65535, nil, abi.StatusUnsupported,
			"sdk: probe_decode names adapter component 65535; this module has 3"},
		{"fused, translator is an adapter", abi.OpFusedStream, 2, 1, events, abi.StatusUnsupported,
			"sdk: fused_stream needs a translator; component 2 (plain) is an adapter"},
		{"fused, adapter is a translator", abi.OpFusedRequest, 0, 0, nil, abi.StatusUnsupported,
			"sdk: fused_request needs an adapter; component 0 (t) is a translator"},
		{"fused, adapter out of range", abi.OpFusedResponse, 0, 3, nil, abi.StatusUnsupported,
			"sdk: fused_response names adapter component 3; this module has 3"},
		{"fused ok", abi.OpFusedStream, 0, 2, events, abi.StatusOK, ""},
		{"op not implemented", abi.OpErrorEncode, 0, 0, []byte(`{}`), abi.StatusUnsupported, ErrUnsupported.Error()},
		{"unknown op", 6, 0, 0, nil, abi.StatusUnsupported, ErrUnsupported.Error()},
		{"unknown op past fused", 35, 0, 1, nil, abi.StatusUnsupported, ErrUnsupported.Error()},
	}
	for _, tc := range cases {
		r := run(t, p, tc.op, callIdx(tc.ti, tc.ai, abi.FlagFirst, nil, nil, tc.pay))
		if r.Status != tc.status || r.Error != tc.err {
			t.Errorf("%s: %v %q, want %v %q", tc.name, r.Status, r.Error, tc.status, tc.err)
		}
	}
	// A module of one component answers index 0 only.
	single := NewAdapter(Manifest{Name: "solo"}, fakeAdapter{})
	if r := run(t, single, abi.OpStreamDecode, callIdx(0, 0, 0, nil, nil, events)); r.Status != abi.StatusOK || r.Flags&abi.ResultStreamDone == 0 {
		t.Errorf("single: %v %q", r.Status, r.Error)
	}
	if r := run(t, single, abi.OpStreamDecode, callIdx(0, 1, 0, nil, nil, events)); r.Status != abi.StatusUnsupported ||
		!strings.Contains(r.Error, "adapter component 1; this module has 1") {
		t.Errorf("single index 1: %v %q", r.Status, r.Error)
	}
	if r := run(t, single, abi.OpFusedStream, callIdx(0, 0, 0, nil, nil, events)); r.Status != abi.StatusUnsupported {
		t.Errorf("single fused: %v %q", r.Status, r.Error)
	}
}

func TestFusedState_Layout(t *testing.T) {
	for _, tc := range []struct {
		started bool
		a, tr   string
	}{{false, "", ""}, {true, "", ""}, {true, "adapter", ""}, {false, "", "translator"}, {true, strings.Repeat("x", 300), "y"}} {
		b := appendFusedState(nil, tc.started, []byte(tc.a), []byte(tc.tr))
		if b[0] != fusedStateVersion || (b[1] == fusedTranslatorStarted) != tc.started {
			t.Errorf("header %v", b[:2])
		}
		var s fusedState
		if err := s.parse(b); err != nil || s.started != tc.started || string(s.adapter) != tc.a || string(s.translator) != tc.tr {
			t.Errorf("%+v: parsed %v %+v", tc, err, s)
		}
		// The adapter's slice must not reach into the translator's on append.
		if cap(s.adapter) != len(s.adapter) {
			t.Errorf("adapter slice cap %d > len %d", cap(s.adapter), len(s.adapter))
		}
	}
	// Exact bytes: version, flags, uvarint length, adapter, translator.
	if b := appendFusedState(nil, true, []byte("ab"), []byte("c")); string(b) != "\x01\x01\x02abc" {
		t.Errorf("layout %q", b)
	}
	var s fusedState
	if err := s.parse(nil); err != nil || s.started || s.adapter != nil || s.translator != nil {
		t.Errorf("empty blob: %v %+v", err, s)
	}
	for _, bad := range []string{"\x01", "\x01\x00", "\x02\x00\x00", "\x01\x02\x00", "\x01\x00\x05abc", "\x01\x00\xff"} {
		if err := s.parse([]byte(bad)); !errors.Is(err, ErrState) {
			t.Errorf("blob %q accepted", bad)
		}
	}
	p := NewBundle("b", "1", TranslatorPart(Manifest{Name: "t"}, fakeTranslator{}), AdapterPart(Manifest{Name: "a"}, fakeAdapter{}))
	r := run(t, p, abi.OpFusedStream, callIdx(0, 1, 0, []byte("\x07junk"), nil, nil))
	if r.Status != abi.StatusBadInput || r.Error != "fused stream state: "+ErrState.Error() {
		t.Errorf("corrupt fused state: %v %q", r.Status, r.Error)
	}
}

// streamTranslator writes its flags and chunks, so a test sees which calls
// it got. Its state counts chunks and is Set only when chunks arrive.
type streamTranslator struct{ Unimplemented }

func (streamTranslator) EncodeStream(c *Call, st *State, chunks []canon.ChatChunk, out *Output) error {
	r := StateReader{B: st.In}
	n := uint64(0)
	if len(st.In) > 0 {
		if n = r.Uint(); r.Err() != nil {
			return BadInput("translator state")
		}
	}
	if c.First() != (len(st.In) == 0) && len(chunks) > 0 {
		return errors.New("FlagFirst and state disagree")
	}
	if c.Op != abi.OpStreamEncode || c.Meta(abi.MetaID) != "id1" {
		return fmt.Errorf("translator sees op %s meta id %q", c.Op, c.Meta(abi.MetaID))
	}
	if c.First() {
		out.Body = append(out.Body, "<first>"...)
	}
	for i := range chunks {
		n++
		for _, ch := range chunks[i].Choices {
			out.Body = append(out.Body, ch.Delta.Content...)
		}
		if u := chunks[i].Usage; u != nil {
			out.Body = fmt.Appendf(out.Body, "(usage %d)", u.CompletionTokens)
		}
	}
	if c.End() {
		out.Body = strconv.AppendUint(append(out.Body, "<end "...), n, 10)
		out.Body = append(out.Body, '>')
	}
	if len(chunks) > 0 {
		var w StateWriter
		w.Uint(n)
		st.Set(w.B)
	}
	return nil
}

// statelessTranslator never Sets its state: only the fused state's
// started flag tells it that its first call is past.
type statelessTranslator struct{ Unimplemented }

func (statelessTranslator) EncodeStream(c *Call, st *State, chunks []canon.ChatChunk, out *Output) error {
	if c.First() {
		out.Body = append(out.Body, "<first>"...)
	}
	for i := range chunks {
		for _, ch := range chunks[i].Choices {
			out.Body = append(out.Body, ch.Delta.Content...)
		}
	}
	if c.End() {
		out.Body = append(out.Body, "<end>"...)
	}
	return nil
}

// streamAdapter turns events into chunks: "-" gives none, "[DONE]" ends
// the stream, "u" reports usage, "f" a finish reason, "bad" is an error,
// "k" is content that leaves the state alone; other events become content
// tagged with the event count. Its state counts events other than "k" and
// is Set only when it changes.
type streamAdapter struct{ Unimplemented }

func (streamAdapter) DecodeStream(c *Call, st *State, events [][]byte, chunks *[]canon.ChatChunk) error {
	if c.Op != abi.OpStreamDecode || len(c.meta) != 0 {
		return fmt.Errorf("adapter sees op %s meta %q", c.Op, c.meta)
	}
	if c.First() && len(st.In) > 0 {
		return fmt.Errorf("adapter FlagFirst with state %q", st.In)
	}
	mark := "" // "^" on the first content of a stream's first call
	if c.First() {
		mark = "^"
	}
	n := 0
	if len(st.In) > 0 {
		n, _ = strconv.Atoi(string(st.In))
	}
	changed := false
	for _, ev := range events {
		if string(ev) == "k" {
			*chunks = append(*chunks, canon.ChatChunk{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "k"}}}})
			continue
		}
		n++
		changed = true
		switch string(ev) {
		case "-":
		case "[DONE]":
			c.Done()
		case "u":
			*chunks = append(*chunks, canon.ChatChunk{Usage: &canon.Usage{PromptTokens: 3, CompletionTokens: n, CachedTokens: 1}})
		case "f":
			*chunks = append(*chunks, canon.ChatChunk{Choices: []canon.ChunkChoice{{FinishReason: canon.FinishStop}}})
		case "bad":
			return BadInput("bad event")
		default:
			*chunks = append(*chunks, canon.ChatChunk{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: mark + string(ev) + strconv.Itoa(n)}}}})
			mark = ""
		}
	}
	if changed {
		st.Set([]byte(strconv.Itoa(n)))
	}
	return nil
}

// relay drives a stream as the gateway's relay step does, unfused (two
// calls per batch) or fused (one), and returns the client bytes, the meta
// of each step and the first failure.
type relay struct {
	t              testing.TB
	p              *Plugin
	ti, ai         uint16
	meta           []byte
	fused          bool
	astate, tstate []byte
	fstate         []byte
	aFirst, tFirst bool
	done           bool
	out            []byte
	metas          []map[string]string
}

func newRelay(t testing.TB, p *Plugin, ti, ai uint16, fused bool, meta []byte) *relay {
	return &relay{t: t, p: p, ti: ti, ai: ai, fused: fused, meta: meta, aFirst: true, tFirst: true}
}

// step runs one batch; it returns the failed result, if any.
func (r *relay) step(events [][]byte, end bool) *copied {
	var list []byte
	for _, e := range events {
		list = abi.AppendItem(list, e)
	}
	var flags uint32
	if r.aFirst {
		flags |= abi.FlagFirst
	}
	if end {
		flags |= abi.FlagEnd
	}
	if r.fused {
		res := run(r.t, r.p, abi.OpFusedStream, callIdx(r.ti, r.ai, flags, r.fstate, r.meta, list))
		if res.Status != abi.StatusOK {
			return &res
		}
		r.aFirst = false
		if res.Flags&abi.ResultStateKeep == 0 {
			r.fstate = res.State
		}
		r.done = r.done || res.Flags&abi.ResultStreamDone != 0
		r.out = append(r.out, res.Payload...)
		r.metas = append(r.metas, res.Meta)
		return nil
	}
	dec := run(r.t, r.p, abi.OpStreamDecode, callIdx(r.ti, r.ai, flags, r.astate, nil, list))
	if dec.Status != abi.StatusOK {
		return &dec
	}
	r.aFirst = false
	if dec.Flags&abi.ResultStateKeep == 0 {
		r.astate = dec.State
	}
	r.done = r.done || dec.Flags&abi.ResultStreamDone != 0
	if len(dec.Payload) == 0 && !end {
		r.metas = append(r.metas, dec.Meta)
		return nil
	}
	flags = 0
	if r.tFirst {
		flags |= abi.FlagFirst
	}
	if end {
		flags |= abi.FlagEnd
	}
	enc := run(r.t, r.p, abi.OpStreamEncode, callIdx(r.ti, r.ai, flags, r.tstate, r.meta, dec.Payload))
	if enc.Status != abi.StatusOK {
		return &enc
	}
	r.tFirst = false
	if enc.Flags&abi.ResultStateKeep == 0 {
		r.tstate = enc.State
	}
	r.out = append(r.out, enc.Payload...)
	for k, v := range enc.Meta {
		dec.Meta[k] = v
	}
	r.metas = append(r.metas, dec.Meta)
	return nil
}

// stream runs batches then, unless the backend stopped it, the end call.
func (r *relay) stream(batches [][][]byte) *copied {
	for _, b := range batches {
		if r.done {
			break
		}
		if len(b) == 0 {
			continue // the host calls only when a read framed events
		}
		if f := r.step(b, false); f != nil {
			return f
		}
	}
	return r.step(nil, true)
}

func randomSplit(rng *rand.Rand, events [][]byte) [][][]byte {
	var out [][][]byte
	for len(events) > 0 {
		n := rng.IntN(min(len(events), 4) + 1) // 0: an empty batch
		out = append(out, events[:n])
		events = events[n:]
	}
	return out
}

func TestFusedStream_MatchesRelay(t *testing.T) {
	p := NewBundle("b", "1", AdapterPart(Manifest{Name: "a"}, streamAdapter{}), TranslatorPart(Manifest{Name: "t"}, streamTranslator{}),
		TranslatorPart(Manifest{Name: "stateless"}, statelessTranslator{}))
	meta := metaList(abi.MetaRoute, "chat", abi.MetaID, "id1", abi.MetaModel, "m")
	rng := rand.New(rand.NewPCG(1, 2))
	streams := []string{
		"a b c [DONE]",
		"- - a b [DONE]", // the translator starts after the adapter
		"- - - [DONE]",   // the translator's first call is the end call
		"a f u [DONE] x", // nothing after [DONE] is decoded
		"- u - f",        // no end marker
		"k k k [DONE]",   // the adapter keeps its state while the translator starts
		"- k k - k",
		"- a bad b", // an error mid-stream
		"",
	}
	for _, s := range streams {
		var events [][]byte
		for _, f := range strings.Fields(s) {
			events = append(events, []byte(f))
		}
		splits := [][][][]byte{{events}}
		var one [][][]byte
		for _, e := range events {
			one = append(one, [][]byte{e})
		}
		splits = append(splits, one)
		for range 20 {
			splits = append(splits, randomSplit(rng, events))
		}
		for _, split := range splits {
			for ti := uint16(1); ti <= 2; ti++ {
				un := newRelay(t, p, ti, 0, false, meta)
				fu := newRelay(t, p, ti, 0, true, meta)
				uf, ff := un.stream(split), fu.stream(split)
				if (uf == nil) != (ff == nil) || uf != nil && (uf.Status != ff.Status || uf.Error != ff.Error) {
					t.Fatalf("%q %q translator %d: failures differ: unfused %+v fused %+v", s, split, ti, uf, ff)
				}
				if !bytes.Equal(un.out, fu.out) || un.done != fu.done || fmt.Sprint(un.metas) != fmt.Sprint(fu.metas) {
					t.Fatalf("%q %q:\nunfused %q done %v %v\nfused   %q done %v %v", s, split, un.out, un.done, un.metas, fu.out, fu.done, fu.metas)
				}
			}
		}
	}
	// Spot checks of what the fakes wrote.
	un := newRelay(t, p, 1, 0, true, meta)
	un.stream([][][]byte{{[]byte("-")}, {[]byte("a"), []byte("u")}, {[]byte("[DONE]")}})
	if string(un.out) != "<first>a2(usage 3)<end 2>" || !un.done {
		t.Errorf("out %q done %v", un.out, un.done)
	}
	if m := un.metas[1]; m[abi.MetaPromptTokens] != "3" || m[abi.MetaCompletionTokens] != "3" || m[abi.MetaCachedTokens] != "1" {
		t.Errorf("usage meta %v", m)
	}
}

// The fused state keeps each component's blob unless that component Sets
// it, and the result keeps the whole blob when nothing changed.
func TestFusedStream_StateKeep(t *testing.T) {
	p := NewBundle("b", "1", TranslatorPart(Manifest{Name: "t"}, streamTranslator{}), AdapterPart(Manifest{Name: "a"}, streamAdapter{}))
	meta := metaList(abi.MetaID, "id1")
	ev := func(s ...string) []byte {
		var l []byte
		for _, e := range s {
			l = abi.AppendItem(l, []byte(e))
		}
		return l
	}
	parse := func(b []byte) fusedState {
		var s fusedState
		if err := s.parse(b); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Adapter Sets, the translator is not called: only the adapter's part changes.
	r := run(t, p, abi.OpFusedStream, callIdx(0, 1, abi.FlagFirst, nil, meta, ev("-")))
	if r.Flags&abi.ResultStateKeep != 0 || len(r.Payload) != 0 {
		t.Fatalf("first: flags %b payload %q", r.Flags, r.Payload)
	}
	if s := parse(r.State); string(s.adapter) != "1" || s.started || len(s.translator) != 0 {
		t.Fatalf("after first: %+v", s)
	}
	// Both Set.
	r = run(t, p, abi.OpFusedStream, callIdx(0, 1, 0, r.State, meta, ev("a")))
	s := parse(r.State)
	if string(s.adapter) != "2" || !s.started || len(s.translator) == 0 || string(r.Payload) != "<first>a2" {
		t.Fatalf("second: %+v %q", s, r.Payload)
	}
	// An empty batch: nobody Sets, nothing changes: the host keeps the blob.
	st := r.State
	r = run(t, p, abi.OpFusedStream, callIdx(0, 1, 0, st, meta, nil))
	if r.Flags&abi.ResultStateKeep == 0 || len(r.State) != 0 {
		t.Fatalf("empty batch: flags %b state %q", r.Flags, r.State)
	}
	// The end call: the translator runs (no chunks) and keeps its blob; the
	// adapter keeps its own.
	r = run(t, p, abi.OpFusedStream, callIdx(0, 1, abi.FlagEnd, st, meta, nil))
	if r.Flags&abi.ResultStateKeep == 0 || string(r.Payload) != "<end 1>" {
		t.Fatalf("end: flags %b payload %q", r.Flags, r.Payload)
	}
	// Only the adapter Sets: the translator's blob and flag are carried over.
	r = run(t, p, abi.OpFusedStream, callIdx(0, 1, 0, appendFusedState(nil, true, []byte("7"), []byte("T")), meta, ev("-")))
	s = parse(r.State)
	if string(s.adapter) != "8" || string(s.translator) != "T" || !s.started {
		t.Fatalf("adapter part %+v", s)
	}
	// An error keeps the state and reports the component's message.
	r = run(t, p, abi.OpFusedStream, callIdx(0, 1, 0, st, meta, ev("bad")))
	if r.Status != abi.StatusBadInput || r.Error != "bad event" || r.Flags&abi.ResultStateKeep == 0 {
		t.Fatalf("error: %v %q %b", r.Status, r.Error, r.Flags)
	}
}

// reqTranslator and reqAdapter report the meta each half sees.
type reqTranslator struct{ Unimplemented }

func (reqTranslator) DecodeRequest(c *Call, body []byte, req *canon.ChatRequest) error {
	if string(body) == "bad" {
		return BadInput("bad request")
	}
	req.Model, req.Stream, req.MaxTokens = "m1", true, 64
	req.User = c.Op.String() + " route=" + c.Meta(abi.MetaRoute) + " ctx=" + c.Meta(abi.MetaContextLength)
	return nil
}

func (reqTranslator) EncodeResponse(c *Call, resp *canon.ChatResponse, out *Output) error {
	out.Body = append(out.Body, c.Op.String()+" id="+c.Meta(abi.MetaID)+" "+resp.Choices[0].Message.Text()...)
	out.SetMeta(abi.MetaContentType, "text/x")
	return nil
}

type reqAdapter struct{ Unimplemented }

func (reqAdapter) EncodeRequest(c *Call, req *canon.ChatRequest, out *Output) error {
	out.Body = fmt.Appendf(out.Body, "%s | %s route=%s ctx=%d", req.User, c.Op, c.Meta(abi.MetaRoute), req.ContextLength)
	out.SetMeta(abi.MetaPath, "/gen")
	return nil
}

func (reqAdapter) DecodeResponse(c *Call, body []byte, resp *canon.ChatResponse) error {
	resp.Choices = []canon.Choice{{Message: canon.Message{Role: canon.RoleAssistant, Content: []canon.Part{{Type: canon.PartText,
		Text: c.Op.String() + " id=" + c.Meta(abi.MetaID) + " " + string(body)}}}, FinishReason: canon.FinishLength}}
	resp.Usage = &canon.Usage{PromptTokens: 5, CompletionTokens: 6, ReasoningTokens: 2}
	return nil
}

func TestFusedRequestResponse(t *testing.T) {
	p := NewBundle("b", "1", AdapterPart(Manifest{Name: "a"}, reqAdapter{}), TranslatorPart(Manifest{Name: "t"}, reqTranslator{}))
	for _, ctx := range []string{"", "4096"} {
		meta := metaList(abi.MetaRoute, "chat", abi.MetaKind, "chat")
		if ctx != "" {
			meta = abi.AppendMeta(meta, abi.MetaContextLength, ctx)
		}
		fused := run(t, p, abi.OpFusedRequest, callIdx(1, 0, 0, nil, meta, []byte("x")))
		dec := run(t, p, abi.OpRequestDecode, callIdx(1, 0, 0, nil, metaList(abi.MetaRoute, "chat", abi.MetaKind, "chat"), []byte("x")))
		var encMeta []byte
		if ctx != "" {
			encMeta = metaList(abi.MetaContextLength, ctx)
		}
		enc := run(t, p, abi.OpRequestEncode, callIdx(1, 0, 0, nil, encMeta, dec.Payload))
		for k, v := range enc.Meta {
			dec.Meta[k] = v
		}
		want := "request_decode route=chat ctx= | request_encode route= ctx=0"
		if ctx != "" {
			want = "request_decode route=chat ctx= | request_encode route= ctx=4096"
		}
		if fused.Status != abi.StatusOK || string(fused.Payload) != want || string(enc.Payload) != want ||
			fmt.Sprint(fused.Meta) != fmt.Sprint(dec.Meta) || fused.Flags != abi.ResultStateKeep {
			t.Errorf("ctx %q:\nfused   %v %q %v\nunfused %q %v", ctx, fused.Status, fused.Payload, fused.Meta, enc.Payload, dec.Meta)
		}
		if fused.Meta[abi.MetaMaxTokens] != "64" || fused.Meta[abi.MetaPath] != "/gen" || fused.Meta[abi.MetaStream] != "1" {
			t.Errorf("fused request meta %v", fused.Meta)
		}
	}
	if r := run(t, p, abi.OpFusedRequest, callIdx(1, 0, 0, nil, nil, []byte("bad"))); r.Status != abi.StatusBadInput || r.Error != "bad request" {
		t.Errorf("bad request: %v %q", r.Status, r.Error)
	}

	meta := metaList(abi.MetaRoute, "chat", abi.MetaID, "rid", abi.MetaModel, "m", abi.MetaCreated, "1")
	fused := run(t, p, abi.OpFusedResponse, callIdx(1, 0, 0, nil, meta, []byte("body")))
	dec := run(t, p, abi.OpResponseDecode, callIdx(1, 0, 0, nil, nil, []byte("body")))
	enc := run(t, p, abi.OpResponseEncode, callIdx(1, 0, 0, nil, meta, dec.Payload))
	for k, v := range enc.Meta {
		dec.Meta[k] = v
	}
	if string(fused.Payload) != "response_encode id=rid response_decode id= body" || !bytes.Equal(fused.Payload, enc.Payload) ||
		fmt.Sprint(fused.Meta) != fmt.Sprint(dec.Meta) {
		t.Errorf("response:\nfused   %q %v\nunfused %q %v", fused.Payload, fused.Meta, enc.Payload, dec.Meta)
	}
	for k, v := range map[string]string{abi.MetaPromptTokens: "5", abi.MetaCompletionTokens: "6", abi.MetaReasoningTokens: "2",
		abi.MetaFinishReason: "length", abi.MetaContentType: "text/x"} {
		if fused.Meta[k] != v {
			t.Errorf("response meta %s = %q, want %q", k, fused.Meta[k], v)
		}
	}
}

type panicAdapter struct{ Unimplemented }

func (panicAdapter) DecodeResponse(*Call, []byte, *canon.ChatResponse) error { panic("kaboom") }

func TestFused_Panic(t *testing.T) {
	p := NewBundle("b", "1", TranslatorPart(Manifest{Name: "t"}, reqTranslator{}), AdapterPart(Manifest{Name: "a"}, panicAdapter{}))
	r := run(t, p, abi.OpFusedResponse, callIdx(0, 1, 0, nil, nil, []byte("x")))
	if r.Status != abi.StatusPluginError || r.Error != "panic in fused_response: kaboom" {
		t.Errorf("%v %q", r.Status, r.Error)
	}
}

func TestFilterMeta(t *testing.T) {
	cl, img := abi.MetaContextLength, abi.MetaImage
	m := metaList(cl, "1", "b", "2", img, "3")
	if got := filterMeta(nil, m, true); !bytes.Equal(got, metaList(cl, "1", img, "3")) {
		t.Errorf("keep %q", got)
	}
	if got := filterMeta(nil, m, false); !bytes.Equal(got, metaList("b", "2")) {
		t.Errorf("drop %q", got)
	}
	if got := filterMeta(nil, append(metaList("b", "2"), 9), false); !bytes.Equal(got, metaList("b", "2")) {
		t.Errorf("malformed %q", got)
	}
}

func FuzzFusedState(f *testing.F) {
	f.Add([]byte{}, []byte("a"), []byte("t"), true)
	f.Add([]byte("\x01\x01\x02abc"), []byte{}, []byte{}, false)
	f.Fuzz(func(t *testing.T, blob, a, tr []byte, started bool) {
		var s fusedState
		if s.parse(blob) == nil {
			// Re-encoding gives the same parts (the length may have had a
			// longer uvarint form).
			var s2 fusedState
			if err := s2.parse(appendFusedState(nil, s.started, s.adapter, s.translator)); err != nil || s2.started != s.started ||
				!bytes.Equal(s2.adapter, s.adapter) || !bytes.Equal(s2.translator, s.translator) {
				t.Fatalf("%q: %+v re-parses as %+v (%v)", blob, s, s2, err)
			}
		}
		b := appendFusedState(nil, started, a, tr)
		if err := s.parse(b); err != nil || s.started != started || !bytes.Equal(s.adapter, a) || !bytes.Equal(s.translator, tr) {
			t.Fatalf("round trip of %v %q %q: %v %+v", started, a, tr, err, s)
		}
	})
}

// capAdapter reports the MaxTokens the adapter was given.
type capAdapter struct{ Unimplemented }

func (capAdapter) EncodeRequest(_ *Call, req *canon.ChatRequest, out *Output) error {
	out.Body = fmt.Appendf(out.Body, "max=%d", req.MaxTokens)
	return nil
}

// capPatch would answer every fused request itself.
type capPatch struct{}

func (capPatch) PatchRequest(_ *Call, _ []byte, _ *canon.ChatRequest, out *Output) bool {
	out.Body = append(out.Body, "patched"...)
	return true
}
func (capPatch) PatchResponse(*Call, []byte, *PatchReport, *Output) bool               { return false }
func (capPatch) PatchStream(*Call, *PatchStream, [][]byte, *PatchReport, *Output) bool { return false }

// The host's output cap (abi.MetaMaxOutput, ABI 2.3) lowers the request's
// max_tokens, sets it when the client named none, never raises it, and
// takes a capped fused request off the patch path (a patch copies the
// client's max_tokens as is).
func TestMaxOutputCap(t *testing.T) {
	p := NewBundle("b", "1", AdapterPart(Manifest{Name: "a"}, capAdapter{}), TranslatorPart(Manifest{Name: "t"}, reqTranslator{}).Patch("a", capPatch{}))
	for _, tc := range []struct{ cap, want string }{{"", "patched"}, {"10", "max=10"}, {"100", "max=64"}, {"junk", "max=64"}} {
		meta := metaList(abi.MetaRoute, "chat", abi.MetaKind, "chat")
		var encMeta []byte
		if tc.cap != "" {
			meta = abi.AppendMeta(meta, abi.MetaMaxOutput, tc.cap)
			encMeta = metaList(abi.MetaMaxOutput, tc.cap)
		}
		fused := run(t, p, abi.OpFusedRequest, callIdx(1, 0, 0, nil, meta, []byte("x")))
		if string(fused.Payload) != tc.want {
			t.Errorf("fused, cap %q: %q, want %q", tc.cap, fused.Payload, tc.want)
		}
		if tc.cap == "" {
			continue
		}
		dec := run(t, p, abi.OpRequestDecode, callIdx(1, 0, 0, nil, metaList(abi.MetaRoute, "chat", abi.MetaKind, "chat"), []byte("x")))
		enc := run(t, p, abi.OpRequestEncode, callIdx(1, 0, 0, nil, encMeta, dec.Payload))
		if string(enc.Payload) != tc.want {
			t.Errorf("unfused, cap %q: %q, want %q", tc.cap, enc.Payload, tc.want)
		}
	}
	// No max_tokens from the client: the cap sets one.
	a := NewAdapter(Manifest{Name: "a"}, capAdapter{})
	req := (&canon.ChatRequest{Model: "m"}).AppendJSON(nil)
	if enc := run(t, a, abi.OpRequestEncode, callIdx(0, 0, 0, nil, metaList(abi.MetaMaxOutput, "7"), req)); string(enc.Payload) != "max=7" {
		t.Errorf("no client max_tokens: %q", enc.Payload)
	}
}
