package sdktest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func TestDefaultMeta(t *testing.T) {
	h := New(t, newEcho(&echo{}))
	if got := h.DecodeRequest([]byte("hi")).Model; got != "talk/chat/hi" {
		t.Errorf("request_decode meta: model %q", got)
	}
	if got := h.DecodeRequest([]byte("hi"), Meta(abi.MetaRoute, "other")).Model; got != "other/chat/hi" {
		t.Errorf("a Meta option must replace the default: %q", got)
	}
	if got := h.Call(abi.OpRequestDecode, Payload([]byte("hi")), NoDefaults()); !strings.HasPrefix(string(got.Payload), `{"model":"/`) {
		t.Errorf("NoDefaults: %s", got.Payload)
	}
	out := h.EncodeResponse(canon.ChatResponse{Model: "b"})
	if string(out) != DefaultID+" "+DefaultModel+" "+DefaultCreated+" b" {
		t.Errorf("response_encode meta: %q", out)
	}
	r := h.Call(abi.OpResponseEncode, Payload((&canon.ChatResponse{}).AppendJSON(nil)))
	if r.Meta["x"] != "1" || strings.Count(string(r.RawMeta), "x") != 2 {
		t.Errorf("Meta keeps the first value, RawMeta all: %v %q", r.Meta, r.RawMeta)
	}
	d := New(t, sdk.NewAdapter(manifest("counter", sdk.KindAdapter), counter{}))
	if got := d.DecodeProbe("health", []byte("ok")).Version; got != "health 200 ok" {
		t.Errorf("probe_decode meta: %q", got)
	}
}

// A Result must survive the plugin's next call (which reuses its buffer).
func TestResultIsCopied(t *testing.T) {
	h := New(t, newEcho(&echo{}))
	a := h.Call(abi.OpRequestDecode, Payload([]byte("first")))
	h.Call(abi.OpRequestDecode, Payload([]byte("second, longer")))
	if !strings.Contains(string(a.Payload), "first") {
		t.Errorf("result changed under the next call: %s", a.Payload)
	}
}

func TestExpect(t *testing.T) {
	h := New(t, newEcho(&echo{}))
	if msg := h.RequestError(nil); msg != "empty body" {
		t.Errorf("RequestError %q", msg)
	}
	f := run(t, func(tb *fakeTB) { New(tb, newEcho(&echo{})).RequestError([]byte("fine")) })
	if !f.Failed() || !strings.Contains(f.text(), "status ok") {
		t.Errorf("RequestError on an accepted body must fail: %q", f.text())
	}
	f = run(t, func(tb *fakeTB) { New(tb, newEcho(&echo{})).DecodeRequest(nil) })
	if !f.Failed() || !strings.Contains(f.text(), "bad_input (empty body)") {
		t.Errorf("DecodeRequest on a refused body must fail: %q", f.text())
	}
}

func TestStreams(t *testing.T) {
	h := New(t, newEcho(&echo{}))
	out := h.EncodeStream([][]canon.ChatChunk{{chunk("a"), chunk("b")}, {chunk("c")}})
	if string(out) != "a\nb\nc\nend 3\n" {
		t.Errorf("EncodeStream %q", out)
	}
	d := New(t, sdk.NewAdapter(manifest("counter", sdk.KindAdapter), counter{}))
	lines := NDJSONLines([]byte("a\r\n\nb\ndone\nafter\n"))
	chunks, done := d.DecodeStream([][][]byte{lines[:1], lines[1:3], lines[3:]})
	if !done || len(chunks) != 2 || chunks[1].Choices[0].Delta.Content != "b" {
		t.Errorf("DecodeStream: done %v, %+v", done, chunks)
	}
	// After the end marker the gateway stops reading and makes the end
	// call: two calls here, "after" never sent.
	s := d.Stream(abi.OpStreamDecode, [][][]byte{lines[:3], lines[3:]})
	if len(s.Calls) != 2 || !s.Done {
		t.Errorf("the stream must stop after the plugin said done, then end: %d calls", len(s.Calls))
	}
}

func TestSSEEvents(t *testing.T) {
	got := SSEEvents([]byte(": comment\r\ndata: {\"a\":1}\r\n\r\nevent: x\ndata: l1\ndata:l2\n\nid: 3\n\ndata: [DONE]"))
	want := []string{`{"a":1}`, "l1\nl2", "[DONE]"}
	if len(got) != len(want) {
		t.Fatalf("events %q", got)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("event %d: %q, want %q", i, got[i], want[i])
		}
	}
}

func TestSplitInvariant(t *testing.T) {
	items := Chunks(chunk("a"), chunk("b"), chunk("c"), chunk("d"))
	if out := SplitInvariant(t, newEcho(&echo{}), abi.OpStreamEncode, items); string(out) != "a\nb\nc\nd\nend 4\n" {
		t.Errorf("output %q", out)
	}
	f := run(t, func(tb *fakeTB) { SplitInvariant(tb, newEcho(&echo{perCall: true}), abi.OpStreamEncode, items) })
	if !f.Failed() || !strings.Contains(f.text(), "cut at [1]") {
		t.Errorf("a plugin whose output depends on batching must fail: %q", f.text())
	}
	d := sdk.NewAdapter(manifest("counter", sdk.KindAdapter), counter{})
	SplitInvariant(t, d, abi.OpStreamDecode, NDJSONLines([]byte("a\nb\nc\ndone\n")))
}

func TestCuttings(t *testing.T) {
	if n := len(Cuttings(5)); n != 15 {
		t.Errorf("5 items: %d cuttings, want 2^4-1", n)
	}
	c := Cuttings(20)
	if len(c) != 19+19*18/2+1+200 {
		t.Errorf("20 items: %d cuttings", len(c))
	}
	for _, cuts := range c {
		b := Batches(make([][]byte, 20), cuts)
		n := 0
		for _, x := range b {
			if len(x) == 0 {
				t.Fatalf("cuts %v give an empty batch", cuts)
			}
			n += len(x)
		}
		if n != 20 {
			t.Fatalf("cuts %v lose items", cuts)
		}
	}
}

func TestGolden(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "x.json")
	t.Setenv("MINDROUTER_UPDATE_GOLDEN", "1")
	Golden(t, path, []byte(`{"b":1,"a":[1,2.50]}`))
	t.Setenv("MINDROUTER_UPDATE_GOLDEN", "")
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    2.50\n  ]\n}\n" {
		t.Fatalf("update wrote %q, %v", b, err)
	}
	Golden(t, path, []byte(` {"b":1, "a":[1, 2.50]}`)) // same document, other spacing
	f := run(t, func(tb *fakeTB) { Golden(tb, path, []byte(`{"b":2,"a":[1,2.50]}`)) })
	if !f.Failed() || !strings.Contains(f.text(), `"b": 2`) {
		t.Errorf("a changed value must fail with a diff: %q", f.text())
	}
	raw := filepath.Join(dir, "x.ndjson")
	if err := os.WriteFile(raw, []byte("{\"a\":1}\n{\"b\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Golden(t, raw, []byte("{\"a\":1}\n{\"b\":2}\n"))
	f = run(t, func(tb *fakeTB) { Golden(tb, raw, []byte("{\"a\":1}\n{\"b\": 2}\n")) })
	if !f.Failed() {
		t.Error("non-JSON output must be compared byte for byte")
	}
	f = run(t, func(tb *fakeTB) { Golden(tb, filepath.Join(dir, "missing.json"), []byte("{}")) })
	if !f.Failed() || !strings.Contains(f.text(), "-update") {
		t.Errorf("a missing file must say how to create it: %q", f.text())
	}
}

// fuzzOne is FuzzOp's check of one input.
func TestFuzzCheck(t *testing.T) {
	p := newEcho(&echo{panics: true})
	New(t, p).fuzzOne(abi.OpRequestDecode, nil, []byte("fine"), nil, 0)
	New(t, p).fuzzOne(abi.OpRequestDecode, nil, nil, nil, 0) // bad_input is fine
	f := run(t, func(tb *fakeTB) { New(tb, p).fuzzOne(abi.OpRequestDecode, nil, []byte("boom"), nil, 0) })
	if !f.Failed() || !strings.Contains(f.text(), "plugin_error") {
		t.Errorf("a panic must fail: %q", f.text())
	}
	f = run(t, func(tb *fakeTB) { New(tb, p).fuzzOne(abi.OpProbeDecode, nil, nil, nil, 0) })
	if !f.Failed() || !strings.Contains(f.text(), "unsupported") {
		t.Errorf("an op the plugin lacks must fail: %q", f.text())
	}
	// A corrupt state blob must be refused as bad input, not crash.
	New(t, p).fuzzOne(abi.OpStreamEncode, nil, Chunks(chunk("a"))[0], []byte{0xff}, abi.FlagEnd)
}

func FuzzEcho(f *testing.F) {
	FuzzOp(f, newEcho(&echo{}), abi.OpStreamEncode, []byte(strings.Join([]string{
		string(Chunks(chunk("a"))[0]), string(Chunks(chunk("b"))[0])}, "\n")))
}

// A bundle's components are addressed by name, and a fused stream is
// driven (and checked for split invariance) like any other.
func TestBundle(t *testing.T) {
	p := sdk.NewBundle("b", "1",
		sdk.AdapterPart(manifest("counter", sdk.KindAdapter), counter{}),
		sdk.TranslatorPart(manifest("echo", sdk.KindTranslator), &echo{}))
	h := New(t, p).Pair("echo", "counter")
	if h.Translator != 1 || h.Adapter != 0 {
		t.Fatalf("indexes %d %d", h.Translator, h.Adapter)
	}
	out := h.SplitInvariant(abi.OpFusedStream, NDJSONLines([]byte("a\nb\ndone\n")))
	if string(out) != "a\nb\nend 2\n" {
		t.Errorf("fused stream %q", out)
	}
	f := run(t, func(tb *fakeTB) { New(tb, p).Pair("counter", "") })
	if !f.Failed() {
		t.Error("an adapter named as the translator must fail")
	}
}
