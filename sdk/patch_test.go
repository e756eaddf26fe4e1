package sdk

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// scriptPatch handles a call whose body (or first event) is "patch" and
// declines anything else after scribbling on everything it was given, so
// a test sees that a decline leaves no trace.
type scriptPatch struct{ calls []string }

func (s *scriptPatch) PatchRequest(c *Call, body []byte, req *canon.ChatRequest, out *Output) bool {
	s.calls = append(s.calls, fmt.Sprintf("request %s ctx=%s route=%s", c.Op, c.Meta(abi.MetaContextLength), c.Meta(abi.MetaRoute)))
	out.Body = append(out.Body, "patched:"...)
	out.SetMeta(abi.MetaPath, "/p")
	req.Model, req.MaxTokens = "junk", 99
	if string(body) != "patch" {
		return false
	}
	req.Model, req.Stream, req.IncludeUsage, req.MaxTokens = "pm", true, true, 7
	return true
}

func (s *scriptPatch) PatchResponse(c *Call, body []byte, r *PatchReport, out *Output) bool {
	s.calls = append(s.calls, fmt.Sprintf("response %s id=%s", c.Op, c.Meta(abi.MetaID)))
	out.Body = append(out.Body, "patched:"...)
	out.SetMeta(abi.MetaContentType, "text/p")
	r.HasUsage, r.Usage, r.FinishReason = true, canon.Usage{PromptTokens: 1, CompletionTokens: 2, CachedTokens: 3}, canon.FinishStop
	return string(body) == "patch"
}

func (s *scriptPatch) PatchStream(c *Call, st *PatchStream, events [][]byte, r *PatchReport, out *Output) bool {
	s.calls = append(s.calls, fmt.Sprintf("stream %s flags=%b started=%v a=%q t=%q", c.Op, c.Flags, st.Started, st.Adapter.In, st.Translator.In))
	out.Body = append(out.Body, "patched:"...)
	out.SetMeta(abi.MetaContentType, "text/p")
	st.Adapter.Set([]byte("A"))
	st.Translator.Set([]byte("T"))
	c.Done()
	if len(events) == 0 || string(events[0]) != "patch" {
		return false
	}
	switch {
	case len(events) > 1 && string(events[1]) == "quiet":
		// A batch that stands for no translator call and changes nothing.
		out.Body = out.Body[:0]
		out.meta = out.meta[:0]
		st.Adapter.set, st.Translator.set = false, false
		c.done = false
		return true
	}
	st.Started = true
	r.FinishReason = canon.FinishLength
	return true
}

// metaOrder lists meta keys in the order written.
func metaOrder(t *testing.T, m []byte) []string {
	t.Helper()
	var keys []string
	for len(m) > 0 {
		k, _, rest, err := abi.NextMeta(m)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, string(k))
		m = rest
	}
	return keys
}

func patchBundle(sp *scriptPatch) (patched, plain *Plugin) {
	parts := func() []Component {
		return []Component{
			TranslatorPart(Manifest{Name: "t"}, reqTranslator{}),
			AdapterPart(Manifest{Name: "a"}, reqAdapter{}),
			AdapterPart(Manifest{Name: "other"}, reqAdapter{}),
		}
	}
	ps := parts()
	ps[0] = ps[0].Patch("a", sp)
	return NewBundle("b", "1", ps...), NewBundle("b", "1", parts()...)
}

func TestPatch_Request(t *testing.T) {
	sp := &scriptPatch{}
	p, plain := patchBundle(sp)
	meta := metaList(abi.MetaRoute, "chat", abi.MetaKind, "chat", abi.MetaContextLength, "4096")
	in := callIdx(0, 1, 0, nil, meta, []byte("patch"))
	area := p.Call(abi.OpFusedRequest, in)
	r := run(t, p, abi.OpFusedRequest, in)
	if r.Status != abi.StatusOK || string(r.Payload) != "patched:" || r.Flags != abi.ResultStateKeep {
		t.Fatalf("handled: %v %q %b", r.Status, r.Payload, r.Flags)
	}
	// request_decode's meta (from req), then what the patch wrote.
	pr, _ := abi.ParseResult(area)
	if got := fmt.Sprint(metaOrder(t, pr.Meta)); got != "[model stream include_usage max_tokens path]" {
		t.Errorf("meta order %s", got)
	}
	if fmt.Sprint(r.Meta) != "map[include_usage:1 max_tokens:7 model:pm path:/p stream:1]" {
		t.Errorf("meta %v", r.Meta)
	}
	if sp.calls[0] != "request fused_request ctx=4096 route=chat" {
		t.Errorf("patch saw %s", sp.calls[0])
	}
	// Declined: as if there were no patch.
	for _, body := range []string{"x", "bad"} {
		in := callIdx(0, 1, 0, nil, meta, []byte(body))
		got, want := run(t, p, abi.OpFusedRequest, in), run(t, plain, abi.OpFusedRequest, in)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("declined %s:\n%+v\n%+v", body, got, want)
		}
	}
	// Another adapter: the patch is not asked.
	n := len(sp.calls)
	in = callIdx(0, 2, 0, nil, meta, []byte("patch"))
	if got, want := run(t, p, abi.OpFusedRequest, in), run(t, plain, abi.OpFusedRequest, in); fmt.Sprint(got) != fmt.Sprint(want) || len(sp.calls) != n {
		t.Errorf("other adapter:\n%+v\n%+v\n%v", got, want, sp.calls[n:])
	}
}

func TestPatch_Response(t *testing.T) {
	sp := &scriptPatch{}
	p, plain := patchBundle(sp)
	meta := metaList(abi.MetaID, "rid", abi.MetaModel, "m", abi.MetaCreated, "1")
	in := callIdx(0, 1, 0, nil, meta, []byte("patch"))
	pr, _ := abi.ParseResult(p.Call(abi.OpFusedResponse, in))
	if got := fmt.Sprint(metaOrder(t, pr.Meta)); got != "[prompt_tokens completion_tokens cached_tokens finish_reason content-type]" {
		t.Errorf("meta order %s", got)
	}
	r := run(t, p, abi.OpFusedResponse, in)
	if r.Status != abi.StatusOK || string(r.Payload) != "patched:" || r.Meta[abi.MetaCachedTokens] != "3" || r.Meta[abi.MetaFinishReason] != "stop" {
		t.Errorf("handled: %+v", r)
	}
	if sp.calls[0] != "response fused_response id=rid" {
		t.Errorf("patch saw %s", sp.calls[0])
	}
	in = callIdx(0, 1, 0, nil, meta, []byte("x"))
	if got, want := run(t, p, abi.OpFusedResponse, in), run(t, plain, abi.OpFusedResponse, in); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("declined:\n%+v\n%+v", got, want)
	}
}

func TestPatch_Stream(t *testing.T) {
	sp := &scriptPatch{}
	tr := func() Component { return TranslatorPart(Manifest{Name: "t"}, streamTranslator{}) }
	ad := func() Component { return AdapterPart(Manifest{Name: "a"}, fakeAdapter{}) }
	p := NewBundle("b", "1", tr().Patch("a", sp), ad())
	plain := NewBundle("b", "1", tr(), ad())
	meta := metaList(abi.MetaID, "id1")
	items := func(ev ...string) []byte {
		var b []byte
		for _, e := range ev {
			b = abi.AppendItem(b, []byte(e))
		}
		return b
	}

	// Handled: both states set, the translator started, done, the report's meta.
	r := run(t, p, abi.OpFusedStream, callIdx(0, 1, abi.FlagFirst, nil, meta, items("patch")))
	if r.Status != abi.StatusOK || string(r.Payload) != "patched:" || r.Flags != abi.ResultStreamDone ||
		!bytes.Equal(r.State, appendFusedState(nil, true, []byte("A"), []byte("T"))) ||
		fmt.Sprint(r.Meta) != "map[content-type:text/p finish_reason:length]" {
		t.Errorf("handled: %+v", r)
	}
	if want := `stream fused_stream flags=1 started=false a="" t=""`; sp.calls[0] != want {
		t.Errorf("patch saw %s, want %s", sp.calls[0], want)
	}
	// The patch sees the components' blobs and the started flag.
	st := appendFusedState(nil, true, []byte("a0"), []byte("t0"))
	run(t, p, abi.OpFusedStream, callIdx(0, 1, 0, st, meta, items("patch")))
	if want := `stream fused_stream flags=0 started=true a="a0" t="t0"`; sp.calls[1] != want {
		t.Errorf("patch saw %s, want %s", sp.calls[1], want)
	}
	// Nothing changed: the host keeps its blob.
	r = run(t, p, abi.OpFusedStream, callIdx(0, 1, 0, st, meta, items("patch", "quiet")))
	if r.Status != abi.StatusOK || r.Flags != abi.ResultStateKeep || len(r.Payload) != 0 || len(r.Meta) != 0 {
		t.Errorf("quiet: %+v", r)
	}
	// Declined, anywhere in a stream: as if there were no patch.
	for _, tc := range []struct {
		flags uint32
		state []byte
		ev    []string
	}{
		{abi.FlagFirst, nil, []string{"a", "b"}},
		{0, appendFusedState(nil, true, nil, []byte{1}), []string{"c", "[DONE]"}},
		{abi.FlagEnd, appendFusedState(nil, false, nil, nil), nil},
		{0, []byte("\x07junk"), []string{"patch"}},
	} {
		in := callIdx(0, 1, tc.flags, tc.state, meta, items(tc.ev...))
		if got, want := run(t, p, abi.OpFusedStream, in), run(t, plain, abi.OpFusedStream, in); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("declined %v:\n%+v\n%+v", tc.ev, got, want)
		}
	}
}

func TestPatch_Misuse(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	mustPanic("adapter part", func() { AdapterPart(Manifest{Name: "a"}, fakeAdapter{}).Patch("a", &scriptPatch{}) })
	mustPanic("unknown adapter", func() {
		NewBundle("b", "1", TranslatorPart(Manifest{Name: "t"}, fakeTranslator{}).Patch("nope", &scriptPatch{}),
			AdapterPart(Manifest{Name: "a"}, fakeAdapter{}))
	})
	mustPanic("a translator named", func() {
		NewBundle("b", "1", TranslatorPart(Manifest{Name: "t"}, fakeTranslator{}).Patch("t2", &scriptPatch{}),
			TranslatorPart(Manifest{Name: "t2"}, fakeTranslator{}))
	})
	// Patch returns a copy: the original part has none.
	base := TranslatorPart(Manifest{Name: "t"}, fakeTranslator{})
	_ = base.Patch("a", &scriptPatch{})
	if len(base.patches) != 0 {
		t.Error("Patch changed its receiver")
	}
}
