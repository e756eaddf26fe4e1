package sdk

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

type fakeTranslator struct {
	Unimplemented
}

func (fakeTranslator) DecodeRequest(c *Call, body []byte, req *canon.ChatRequest) error {
	switch string(body) {
	case "panic":
		panic("boom")
	case "bad":
		return BadInput("messages is required")
	case "fail":
		return errors.New("internal bug")
	}
	req.Model = c.Meta("model")
	req.Messages = []canon.Message{{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: string(body)}}}}
	return nil
}

func (fakeTranslator) EncodeStream(c *Call, st *State, chunks []canon.ChatChunk, out *Output) error {
	var r StateReader
	r.B = st.In
	n := r.Uint()
	if len(st.In) > 0 && r.Err() != nil {
		return BadInput("corrupt state")
	}
	for _, ch := range chunks {
		for _, choice := range ch.Choices {
			out.Body = append(out.Body, choice.Delta.Content...)
		}
	}
	if len(chunks) > 0 {
		var w StateWriter
		w.Uint(n + uint64(len(chunks)))
		st.Set(w.B)
	}
	if c.End() {
		out.Body = append(out.Body, "[END]"...)
	}
	return nil
}

type fakeAdapter struct{ Unimplemented }

func (fakeAdapter) DecodeStream(c *Call, st *State, events [][]byte, chunks *[]canon.ChatChunk) error {
	for _, ev := range events {
		if string(ev) == "[DONE]" {
			c.Done()
			continue
		}
		*chunks = append(*chunks, canon.ChatChunk{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: string(ev)}}}})
	}
	return nil
}

func call(flags uint32, state, meta, payload []byte) []byte {
	b := make([]byte, abi.HeaderSize)
	abi.PutHeader(b, abi.Header{Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(meta)), PayloadLen: uint32(len(payload))})
	return append(append(append(b, state...), meta...), payload...)
}

func result(t *testing.T, b []byte) abi.Result {
	t.Helper()
	r, err := abi.ParseResult(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPlugin_Init(t *testing.T) {
	p := NewTranslator(Manifest{Name: "fake", Version: "1", Format: "x"}, fakeTranslator{})
	r := result(t, p.Init(nil))
	var m Manifest
	if r.Status != abi.StatusOK || json.Unmarshal(r.Payload, &m) != nil {
		t.Fatalf("init: %v %s", r.Status, r.Payload)
	}
	if m.Kind != KindTranslator || m.ABI != abi.Version || m.SDKVersion != Version || m.GoVersion == "" {
		t.Fatalf("manifest %+v", m)
	}
}

func TestPlugin_RequestDecodeStatuses(t *testing.T) {
	p := NewTranslator(Manifest{Name: "fake"}, fakeTranslator{})
	meta := abi.AppendMeta(nil, "model", "m1")
	cases := []struct {
		body    string
		status  abi.Status
		errPart string
	}{
		{"hello", abi.StatusOK, ""},
		{"bad", abi.StatusBadInput, "messages is required"},
		{"fail", abi.StatusPluginError, "internal bug"},
		{"panic", abi.StatusPluginError, "panic in request_decode: boom"},
	}
	for _, tc := range cases {
		r := result(t, p.Call(abi.OpRequestDecode, call(0, nil, meta, []byte(tc.body))))
		if r.Status != tc.status || !strings.Contains(string(r.Error), tc.errPart) {
			t.Fatalf("%s: status %v error %q", tc.body, r.Status, r.Error)
		}
		if tc.status == abi.StatusOK {
			var req canon.ChatRequest
			if err := req.DecodeJSON(r.Payload); err != nil || req.Model != "m1" || req.Messages[0].Text() != "hello" {
				t.Fatalf("canonical %s: %v", r.Payload, err)
			}
			// The routing fields are repeated in the meta for the host.
			for k, want := range map[string]string{"model": "m1", "stream": "0", "include_usage": "0"} {
				if v, ok := abi.MetaGet(r.Meta, k); !ok || string(v) != want {
					t.Fatalf("meta %s = %q, want %q", k, v, want)
				}
			}
		}
	}
	// The plugin still works after a panic.
	if r := result(t, p.Call(abi.OpRequestDecode, call(0, nil, meta, []byte("again")))); r.Status != abi.StatusOK {
		t.Fatalf("after panic: %v", r.Status)
	}
	// Ops of the other kind and unknown ops are unsupported.
	for _, op := range []abi.Op{abi.OpRequestEncode, abi.OpModelsEncode, 99} {
		if r := result(t, p.Call(op, call(0, nil, nil, []byte("{}")))); r.Status != abi.StatusUnsupported {
			t.Fatalf("op %d: %v", op, r.Status)
		}
	}
	if r := result(t, p.Call(abi.OpRequestDecode, []byte{1, 2})); r.Status != abi.StatusBadInput {
		t.Fatalf("short call: %v", r.Status)
	}
}

func TestPlugin_StreamStateCarried(t *testing.T) {
	ad := NewAdapter(Manifest{Name: "a"}, fakeAdapter{})
	tr := NewTranslator(Manifest{Name: "t"}, fakeTranslator{})
	var events []byte
	for _, e := range []string{"a", "b", "[DONE]"} {
		events = abi.AppendItem(events, []byte(e))
	}
	r := result(t, ad.Call(abi.OpStreamDecode, call(abi.FlagFirst, nil, nil, events)))
	if r.Status != abi.StatusOK || r.Flags&abi.ResultStreamDone == 0 || r.Flags&abi.ResultStateKeep == 0 {
		t.Fatalf("decode: %v flags %b", r.Status, r.Flags)
	}
	chunks := append([]byte(nil), r.Payload...)
	r = result(t, tr.Call(abi.OpStreamEncode, call(abi.FlagFirst, nil, nil, chunks)))
	if string(r.Payload) != "ab" || r.Flags&abi.ResultStateKeep != 0 {
		t.Fatalf("encode: %q flags %b", r.Payload, r.Flags)
	}
	state := append([]byte(nil), r.State...)
	r = result(t, tr.Call(abi.OpStreamEncode, call(abi.FlagEnd, state, nil, nil)))
	if string(r.Payload) != "[END]" || r.Flags&abi.ResultStateKeep == 0 {
		t.Fatalf("end: %q flags %b", r.Payload, r.Flags)
	}
	if r := result(t, tr.Call(abi.OpStreamEncode, call(0, []byte{0xff, 0xff}, nil, chunks))); r.Status != abi.StatusBadInput {
		t.Fatalf("corrupt state: %v", r.Status)
	}
	if r := result(t, tr.Call(abi.OpStreamEncode, call(0, nil, nil, []byte{9, 0, 0, 0}))); r.Status != abi.StatusBadInput {
		t.Fatalf("bad list: %v", r.Status)
	}
}

func TestStateCodec(t *testing.T) {
	var w StateWriter
	w.Uint(300)
	w.Int(-7)
	w.Bool(true)
	w.String("héllo")
	r := StateReader{B: w.B}
	if r.Uint() != 300 || r.Int() != -7 || !r.Bool() || r.String() != "héllo" || r.Err() != nil {
		t.Fatal("round trip")
	}
	r = StateReader{B: w.B[:3]}
	r.Uint()
	r.Int()
	r.Bool()
	_ = r.String()
	if !errors.Is(r.Err(), ErrState) {
		t.Fatal("truncated state not detected")
	}
}

func TestAppendSSE(t *testing.T) {
	if got := string(AppendSSE(nil, "", []byte(`{}`))); got != "data: {}\n\n" {
		t.Fatal(got)
	}
	if got := string(AppendSSE(nil, "ping", []byte(`{}`))); got != "event: ping\ndata: {}\n\n" {
		t.Fatal(got)
	}
}

type usageAdapter struct{ Unimplemented }

func (usageAdapter) DecodeResponse(c *Call, body []byte, resp *canon.ChatResponse) error {
	resp.Choices = []canon.Choice{{FinishReason: canon.FinishLength}}
	resp.Usage = &canon.Usage{PromptTokens: 12, CompletionTokens: 34, ReasoningTokens: 5}
	return nil
}

func (usageAdapter) DecodeStream(c *Call, st *State, events [][]byte, chunks *[]canon.ChatChunk) error {
	*chunks = append(*chunks,
		canon.ChatChunk{Choices: []canon.ChunkChoice{{FinishReason: canon.FinishToolCalls}}},
		canon.ChatChunk{Usage: &canon.Usage{PromptTokens: 7, CompletionTokens: 9}})
	return nil
}

// ABI v2: the host learns usage and the finish reason from result meta,
// without parsing canonical JSON.
func TestUsageMeta(t *testing.T) {
	p := NewAdapter(Manifest{Name: "u"}, usageAdapter{})
	want := func(r abi.Result, kv ...string) {
		t.Helper()
		for i := 0; i < len(kv); i += 2 {
			if v, _ := abi.MetaGet(r.Meta, kv[i]); string(v) != kv[i+1] {
				t.Errorf("meta %s = %q, want %q", kv[i], v, kv[i+1])
			}
		}
	}
	r := result(t, p.Call(abi.OpResponseDecode, call(0, nil, nil, []byte("{}"))))
	want(r, abi.MetaPromptTokens, "12", abi.MetaCompletionTokens, "34", abi.MetaReasoningTokens, "5",
		abi.MetaCachedTokens, "", abi.MetaFinishReason, "length")
	r = result(t, p.Call(abi.OpStreamDecode, call(abi.FlagFirst, nil, nil, abi.AppendItem(nil, []byte("x")))))
	want(r, abi.MetaPromptTokens, "7", abi.MetaCompletionTokens, "9", abi.MetaFinishReason, "tool_calls")
}

// Request decode repeats the requested max tokens for admission.
func TestRequestDecodeMeta(t *testing.T) {
	p := NewTranslator(Manifest{Name: "t"}, maxTokTranslator{})
	r := result(t, p.Call(abi.OpRequestDecode, call(0, nil, nil, []byte("x"))))
	for k, v := range map[string]string{abi.MetaModel: "m\x00stream\x001", abi.MetaStream: "1", abi.MetaIncludeUsage: "0", abi.MetaMaxTokens: "256",
		abi.MetaChoices: "6"} {
		if got, _ := abi.MetaGet(r.Meta, k); string(got) != v {
			t.Errorf("meta %s = %q, want %q", k, got, v)
		}
	}
}

type maxTokTranslator struct{ Unimplemented }

func (maxTokTranslator) DecodeRequest(c *Call, body []byte, req *canon.ChatRequest) error {
	req.Model, req.Stream, req.MaxTokens = "m\x00stream\x001", true, 256
	req.N, req.Prompt = 3, []string{"a", "b"} // 6 sequences: the budget reserves each one's output
	return nil
}

type ctxLenAdapter struct{ Unimplemented }

func (ctxLenAdapter) EncodeRequest(c *Call, req *canon.ChatRequest, out *Output) error {
	out.Body = append(out.Body, strconv.Itoa(req.ContextLength)...)
	return nil
}

// The host passes the model's context window to request_encode as meta.
func TestRequestEncodeContextLength(t *testing.T) {
	p := NewAdapter(Manifest{Name: "c"}, ctxLenAdapter{})
	var req canon.ChatRequest
	req.Model = "m"
	body := req.AppendJSON(nil)
	r := result(t, p.Call(abi.OpRequestEncode, call(0, nil, abi.AppendMeta(nil, abi.MetaContextLength, "32768"), body)))
	if string(r.Payload) != "32768" {
		t.Fatalf("context length %q", r.Payload)
	}
	r = result(t, p.Call(abi.OpRequestEncode, call(0, nil, nil, body)))
	if string(r.Payload) != "0" {
		t.Fatalf("without meta: %q", r.Payload)
	}
}

// OutputTokens counts a delta as one token, plus one per 4 bytes beyond
// the first 12.
func TestOutputTokens(t *testing.T) {
	for n, want := range map[int]int{0: 0, 1: 1, 12: 1, 13: 2, 16: 2, 17: 3, 412: 101} {
		if got := OutputTokens(n); got != want {
			t.Errorf("OutputTokens(%d) = %d, want %d", n, got, want)
		}
	}
}
