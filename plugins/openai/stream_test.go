package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// streamMeta is what the gateway passes to every stream call.
var streamMeta = []string{"route", RouteChat, "id", "chatcmpl-test123", "model", "gpt-test", "created", "1700000000"}

type streamCase struct {
	meta   []string
	chunks []canon.ChatChunk
}

func loadStream(t testing.TB, name string) streamCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "streams", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Meta   []string          `json:"meta"`
		Chunks []json.RawMessage `json:"chunks"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sc := streamCase{meta: append(append([]string{}, streamMeta...), f.Meta...)}
	for _, c := range f.Chunks {
		var ch canon.ChatChunk
		if err := ch.DecodeJSON(c); err != nil {
			t.Fatalf("%s: chunk %s: %v", name, c, err)
		}
		sc.chunks = append(sc.chunks, ch)
	}
	return sc
}

// TestEncodeStream_Golden encodes each testdata/streams/*.json in one call,
// compares the bytes with *.sse, checks that every way of splitting the
// stream across calls gives the same bytes, and decodes the result with
// the openai-go SDK and an openai-python-style accumulator.
func TestEncodeStream_Golden(t *testing.T) {
	p := newPlugin()
	for _, name := range testFiles(t, "streams", ".json") {
		t.Run(name, func(t *testing.T) {
			sc := loadStream(t, name)
			whole := runStream(t, p, sc.meta, sc.chunks, nil, false)
			golden(t, filepath.Join("streams", name+".sse"), whole)

			n := len(sc.chunks)
			for mask := 0; mask < 1<<max(n-1, 0); mask++ {
				var cuts []int
				for i := 0; i < n-1; i++ {
					if mask&(1<<i) != 0 {
						cuts = append(cuts, i+1)
					}
				}
				for _, endAlone := range []bool{false, true} {
					got := runStream(t, p, sc.meta, sc.chunks, cuts, endAlone)
					if !bytes.Equal(got, whole) {
						t.Fatalf("cuts %v endAlone %v:\n got %s\nwant %s", cuts, endAlone, got, whole)
					}
				}
			}
			checkStreamWithSDKs(t, sc, whole)
		})
	}
}

// expected is what a client should reassemble from a canonical stream.
type expected struct {
	content, reasoning string
	calls              []expectedCall
	finish             string
	usage              *canon.Usage
}

type expectedCall struct{ id, name, args string }

// expect gives what choice index should reassemble to; usage is the
// stream's.
func expect(sc streamCase, index int) expected {
	var e expected
	includeUsage := false
	for i := 0; i+1 < len(sc.meta); i += 2 {
		if sc.meta[i] == "include_usage" {
			includeUsage = sc.meta[i+1] == "1"
		}
	}
	for _, ch := range sc.chunks {
		for _, c := range ch.Choices {
			if c.Index != index {
				continue
			}
			e.content += c.Delta.Content
			e.reasoning += c.Delta.Reasoning
			for _, tc := range c.Delta.ToolCalls {
				for len(e.calls) <= tc.Index {
					e.calls = append(e.calls, expectedCall{id: "call_test123_" + strconv.Itoa(len(e.calls))})
				}
				ec := &e.calls[tc.Index]
				if tc.ID != "" && strings.HasPrefix(ec.id, "call_test123_") {
					ec.id = tc.ID
				}
				if ec.name == "" {
					ec.name = tc.Name
				}
				ec.args += tc.Arguments
			}
			if c.FinishReason != "" {
				e.finish = string(c.FinishReason)
			}
		}
		if ch.Usage != nil && includeUsage {
			u := *ch.Usage
			if u.TotalTokens == 0 {
				u.TotalTokens = u.PromptTokens + u.CompletionTokens
			}
			e.usage = &u
		}
	}
	return e
}

func checkStreamWithSDKs(t *testing.T, sc streamCase, out []byte) {
	t.Helper()
	evs := sseEvents(t, out)
	if len(evs) == 0 || evs[len(evs)-1] != "[DONE]" || strings.Count(string(out), "[DONE]") != 1 {
		t.Fatalf("stream must end with exactly one [DONE]: %s", out)
	}
	if len(evs) == 1 {
		return // an empty stream: just the trailer
	}
	nChoices := 0
	for _, ch := range sc.chunks {
		for _, c := range ch.Choices {
			nChoices = max(nChoices, c.Index+1)
		}
	}

	var acc oai.ChatCompletionAccumulator
	pys := make([]map[string]any, nChoices) // each choice's snapshot, openai-python style
	pyFinishes := make([]string, nChoices)
	for i := range pys {
		pys[i] = map[string]any{}
	}
	for _, ev := range evs[:len(evs)-1] {
		var ch oai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(ev), &ch); err != nil {
			t.Fatalf("openai-go: %v\n%s", err, ev)
		}
		if ch.ID != "chatcmpl-test123" || ch.Model != "gpt-test" || ch.Created != 1700000000 || ch.Object != "chat.completion.chunk" {
			t.Errorf("chunk header: %s", ev)
		}
		if !acc.AddChunk(ch) {
			t.Fatalf("openai-go accumulator rejected %s", ev)
		}
		var raw struct {
			Choices []struct {
				Index        int            `json:"index"`
				Delta        map[string]any `json:"delta"`
				FinishReason *string        `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev), &raw); err != nil {
			t.Fatal(err)
		}
		for _, c := range raw.Choices {
			accumulateDelta(t, pys[c.Index], c.Delta)
			if c.FinishReason != nil {
				pyFinishes[c.Index] = *c.FinishReason
			}
		}
	}
	if len(acc.Choices) != nChoices {
		t.Fatalf("openai-go: %d choices, want %d", len(acc.Choices), nChoices)
	}
	for i := range nChoices {
		checkChoice(t, acc, i, expect(sc, i), pys[i], pyFinishes[i])
	}
}

// checkChoice compares choice i as openai-go and openai-python reassemble
// it with want.
func checkChoice(t *testing.T, acc oai.ChatCompletionAccumulator, i int, want expected, py map[string]any, pyFinish string) {
	t.Helper()
	// openai-go's view.
	msg := acc.Choices[i].Message
	if msg.Content != want.content {
		t.Errorf("openai-go content = %q, want %q", msg.Content, want.content)
	}
	if string(acc.Choices[i].FinishReason) != want.finish {
		t.Errorf("openai-go finish = %q, want %q", acc.Choices[i].FinishReason, want.finish)
	}
	if len(msg.ToolCalls) != len(want.calls) {
		t.Fatalf("openai-go tool calls = %+v, want %+v", msg.ToolCalls, want.calls)
	}
	for i, w := range want.calls {
		tc := msg.ToolCalls[i]
		if tc.ID != w.id || tc.Function.Name != w.name || tc.Function.Arguments != w.args || tc.Type != "function" {
			t.Errorf("openai-go tool call %d = %s %s %s %s, want %+v", i, tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments, w)
		}
	}
	if want.usage == nil {
		if acc.Usage.TotalTokens != 0 {
			t.Errorf("openai-go usage = %+v, want none", acc.Usage)
		}
	} else if u := acc.Usage; u.PromptTokens != int64(want.usage.PromptTokens) || u.CompletionTokens != int64(want.usage.CompletionTokens) ||
		u.TotalTokens != int64(want.usage.TotalTokens) || u.CompletionTokensDetails.ReasoningTokens != int64(want.usage.ReasoningTokens) ||
		u.PromptTokensDetails.CachedTokens != int64(want.usage.CachedTokens) {
		t.Errorf("openai-go usage = %+v, want %+v", u, *want.usage)
	}

	// openai-python's view: string fields concatenate, so role, ids and
	// names must each appear once.
	if len(py) > 0 && py["role"] != "assistant" {
		t.Errorf("python role = %v", py["role"])
	}
	if c, _ := py["content"].(string); c != want.content {
		t.Errorf("python content = %q, want %q", c, want.content)
	}
	if r, _ := py["reasoning_content"].(string); r != want.reasoning {
		t.Errorf("python reasoning_content = %q, want %q", r, want.reasoning)
	}
	calls, _ := py["tool_calls"].([]any)
	if len(calls) != len(want.calls) {
		t.Fatalf("python tool calls = %v, want %+v", calls, want.calls)
	}
	for i, w := range want.calls {
		c := calls[i].(map[string]any)
		fn := c["function"].(map[string]any)
		if c["id"] != w.id || c["type"] != "function" || fn["name"] != w.name || fn["arguments"] != w.args {
			t.Errorf("python tool call %d = %v, want %+v", i, c, w)
		}
	}
	if pyFinish != want.finish {
		t.Errorf("python finish = %q, want %q", pyFinish, want.finish)
	}
}

// accumulateDelta is openai-python's lib/streaming/_deltas.py
// accumulate_delta: strings and numbers add up (except "index" and
// "type"), objects merge, lists of objects merge by "index".
func accumulateDelta(t *testing.T, acc, delta map[string]any) {
	for k, dv := range delta {
		av, ok := acc[k]
		if !ok || av == nil {
			acc[k] = dv
			continue
		}
		if k == "index" || k == "type" {
			acc[k] = dv
			continue
		}
		switch a := av.(type) {
		case string:
			if d, ok := dv.(string); ok {
				acc[k] = a + d
			}
		case float64:
			if d, ok := dv.(float64); ok {
				acc[k] = a + d
			}
		case map[string]any:
			if d, ok := dv.(map[string]any); ok {
				accumulateDelta(t, a, d)
			}
		case []any:
			d, ok := dv.([]any)
			if !ok {
				continue
			}
			for _, e := range d {
				em, ok := e.(map[string]any)
				if !ok {
					t.Fatalf("python: list entry %v is not an object", e)
				}
				idx, ok := em["index"].(float64)
				if !ok {
					t.Fatalf("python: list entry %v has no index", em)
				}
				if int(idx) < len(a) {
					accumulateDelta(t, a[int(idx)].(map[string]any), em)
				} else {
					a = append(a, em)
				}
			}
			acc[k] = a
		}
	}
}

func TestEncodeStream_UsageOnlyWhenAsked(t *testing.T) {
	p := newPlugin()
	chunks := []canon.ChatChunk{
		{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "x"}, FinishReason: canon.FinishStop}}, Usage: &canon.Usage{PromptTokens: 1, CompletionTokens: 2}},
		{Usage: &canon.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}},
	}
	for _, tc := range []struct {
		meta  []string
		usage int
	}{
		{streamMeta, 0},
		{append(append([]string{}, streamMeta...), "include_usage", "0"), 0},
		{append(append([]string{}, streamMeta...), "include_usage", "1"), 2},
	} {
		out := string(runStream(t, p, tc.meta, chunks, nil, false))
		if got := strings.Count(out, `"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`); got != tc.usage {
			t.Errorf("meta %v: %d usage chunks, want %d:\n%s", tc.meta, got, tc.usage, out)
		}
		if strings.Count(out, `"usage"`) != tc.usage {
			t.Errorf("meta %v: usage leaked into a choice chunk:\n%s", tc.meta, out)
		}
	}
}

func TestEncodeStream_DoneOnce(t *testing.T) {
	p := newPlugin()
	s := &streamer{t: t, p: p, meta: streamMeta}
	s.send(abi.FlagFirst, []canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "a"}}}}})
	s.send(abi.FlagEnd, nil)
	before := len(s.out)
	// A misbehaving host calling again after the end gets nothing more.
	s.send(abi.FlagEnd, []canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "late"}}}}})
	if len(s.out) != before {
		t.Errorf("output after [DONE]: %q", s.out[before:])
	}
	want := `data: {"id":"chatcmpl-test123","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":"a"},"logprobs":null,"finish_reason":null}]}` + "\n\n" + "data: [DONE]\n\n"
	if string(s.out) != want {
		t.Errorf("got\n%s\nwant\n%s", s.out, want)
	}
}

// TestEncodeStream_StateKeep checks that a call that changes nothing asks
// the host to keep the blob, and that state starts empty.
func TestEncodeStream_StateKeep(t *testing.T) {
	p := newPlugin()
	r := call(t, p, abi.OpStreamEncode, abi.FlagFirst, nil, chunkList(nil), streamMeta...)
	if r.Status != abi.StatusOK || r.Flags&abi.ResultStateKeep == 0 || len(r.Payload) != 0 {
		t.Errorf("empty first call: %+v", r)
	}
	r = call(t, p, abi.OpStreamEncode, abi.FlagFirst, nil, chunkList([]canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "a"}}}}}), streamMeta...)
	if r.Flags&abi.ResultStateKeep != 0 || len(r.State) == 0 || r.State[0] != stateVersion {
		t.Errorf("state after the first delta: %+v", r)
	}
	r2 := call(t, p, abi.OpStreamEncode, 0, r.State, chunkList([]canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "b"}}}}}), streamMeta...)
	if r2.Flags&abi.ResultStateKeep == 0 {
		t.Errorf("unchanged state was stored again: %+v", r2)
	}
}

func TestEncodeStream_CorruptState(t *testing.T) {
	p := newPlugin()
	var w sdk.StateWriter
	good := (&streamState{roles: 1, tools: 3, named: 3}).encode(&w)
	for _, st := range [][]byte{
		{0},                          // unknown version
		{2, 0, 0, 0, 0},              // future version
		{stateVersion},               // truncated
		{stateVersion, 1, 1},         // truncated
		append(bytes.Clone(good), 0), // trailing bytes
		{stateVersion, 0, 0, 0, 2},   // unknown flag
		{stateVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, // varint overflow
	} {
		r := call(t, p, abi.OpStreamEncode, 0, st, chunkList([]canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "x"}}}}}), streamMeta...)
		if r.Status != abi.StatusBadInput || !strings.Contains(r.Error, "corrupt stream state") {
			t.Errorf("state %x: got %s %q", st, r.Status, r.Error)
		}
	}
	var s streamState
	if err := s.decode(good); err != nil || s != (streamState{roles: 1, tools: 3, named: 3}) {
		t.Errorf("round trip: %+v %v", s, err)
	}
}

// TestEncodeStream_Typed drives the typed method directly.
func TestEncodeStream_Typed(t *testing.T) {
	tr := New()
	var out sdk.Output
	st := &sdk.State{}
	c := &sdk.Call{Flags: abi.FlagFirst | abi.FlagEnd}
	chunks := []canon.ChatChunk{
		{ID: "b-1", Model: "backend-model", Created: 42, Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{Index: 0, Name: "f", Arguments: `{"a":`}}}}}},
		{ID: "b-1", Model: "backend-model", Created: 42, Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{Index: 0, Arguments: `1}`}}}, FinishReason: canon.FinishToolCalls}}},
	}
	if err := tr.EncodeStream(c, st, chunks, &out); err != nil {
		t.Fatal(err)
	}
	// Without meta the backend's id, model and created are passed through.
	want := `data: {"id":"b-1","object":"chat.completion.chunk","created":42,"model":"backend-model","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_b-1_0","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"b-1","object":"chat.completion.chunk","created":42,"model":"backend-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"logprobs":null,"finish_reason":"tool_calls"}]}` + "\n\n" +
		"data: [DONE]\n\n"
	if string(out.Body) != want {
		t.Errorf("got\n%s\nwant\n%s", out.Body, want)
	}
}

func TestEncodeStream_OddIndexes(t *testing.T) {
	p := newPlugin()
	chunks := []canon.ChatChunk{
		{Choices: []canon.ChunkChoice{{Index: 70, Delta: canon.Delta{Role: canon.RoleAssistant, ToolCalls: []canon.ToolCallDelta{{Index: -1, ID: "x", Name: "f"}, {Index: 99, Arguments: "{}"}}}}}},
		{Choices: []canon.ChunkChoice{{Index: 70, Delta: canon.Delta{Content: "y"}}, {Index: 71}}},
	}
	out := string(runStream(t, p, streamMeta, chunks, nil, false))
	for _, want := range []string{
		`{"index":70,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":-1,"id":"x","type":"function","function":{"name":"f","arguments":""}},{"index":99,"function":{"arguments":"{}"}}]}`,
		`{"index":70,"delta":{"content":"y"}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
	if strings.Contains(out, `"index":71`) {
		t.Errorf("empty untracked choice was written:\n%s", out)
	}
}

func ExampleTranslator_EncodeStream() {
	p := sdk.NewTranslator(Manifest(), New())
	var meta []byte
	for _, kv := range [][2]string{{"id", "chatcmpl-1"}, {"model", "m"}, {"created", "1"}} {
		meta = abi.AppendMeta(meta, kv[0], kv[1])
	}
	chunk := canon.ChatChunk{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "Hi"}, FinishReason: canon.FinishStop}}}
	list := abi.AppendItem(nil, chunk.AppendJSON(nil))
	in := make([]byte, abi.HeaderSize)
	abi.PutHeader(in, abi.Header{Flags: abi.FlagFirst | abi.FlagEnd, MetaLen: uint32(len(meta)), PayloadLen: uint32(len(list))})
	in = append(append(in, meta...), list...)
	r, _ := abi.ParseResult(p.Call(abi.OpStreamEncode, in))
	fmt.Print(string(r.Payload))
	// Output:
	// data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"logprobs":null,"finish_reason":"stop"}]}
	//
	// data: [DONE]
}
