package ollama

import (
	"bytes"
	"encoding/json"
	"github.com/mindrouter/mindrouter/plugins/internal/thinktag"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// runStream decodes events in batches of the given sizes (the rest in one
// last batch), carrying the state blob the way the host does. It returns the
// chunks as one JSON array and the index of the first batch that reported
// the stream done (-1 if none).
func runStream(t *testing.T, events [][]byte, sizes []int) (chunks []byte, doneAt int) {
	t.Helper()
	h := newHarness()
	var batches [][][]byte
	for _, n := range sizes {
		n = min(n, len(events))
		batches = append(batches, events[:n])
		events = events[n:]
	}
	batches = append(batches, events)
	var state []byte
	var payloads [][]byte
	doneAt = -1
	for i, b := range batches {
		var flags uint32
		if i == 0 {
			flags |= abi.FlagFirst
		}
		if i == len(batches)-1 {
			flags |= abi.FlagEnd
		}
		r := h.call(t, abi.OpStreamDecode, flags, state, items(b))
		if r.Status != abi.StatusOK {
			t.Fatalf("batch %d: status %s: %s", i, r.Status, r.Error)
		}
		if !r.keepState() {
			state = r.State
		}
		if r.done() && doneAt < 0 {
			doneAt = i
		}
		if doneAt >= 0 && !r.done() {
			t.Errorf("batch %d: done not reported again after batch %d", i, doneAt)
		}
		payloads = append(payloads, r.Payload)
	}
	return chunksJSON(t, payloads...), doneAt
}

func TestDecodeStream_Golden(t *testing.T) {
	for _, name := range testFiles(t, "stream", ".ndjson") {
		t.Run(name, func(t *testing.T) {
			got, doneAt := runStream(t, lines(string(readFile(t, "stream/"+name+".ndjson"))), nil)
			if doneAt != 0 {
				t.Errorf("done reported at batch %d, want 0", doneAt)
			}
			golden(t, "stream/"+name+".chunks.json", got)
		})
	}
}

// TestDecodeStream_Split checks that how the host batches lines does not
// change the output: one call, one line per call, and random batches.
func TestDecodeStream_Split(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range testFiles(t, "stream", ".ndjson") {
		t.Run(name, func(t *testing.T) {
			events := lines(string(readFile(t, "stream/"+name+".ndjson")))
			whole, _ := runStream(t, events, nil)
			ones := make([]int, len(events))
			for i := range ones {
				ones[i] = 1
			}
			splits := [][]int{ones, {len(events)}} // the latter adds an empty End call
			for range 20 {
				var s []int
				for n := 0; n < len(events); {
					k := rng.IntN(3)
					s = append(s, k)
					n += k
				}
				splits = append(splits, s)
			}
			for _, s := range splits {
				got, doneAt := runStream(t, events, s)
				if d := cmp.Diff(string(pretty(t, whole)), string(pretty(t, got))); d != "" {
					t.Fatalf("batches %v (-whole +split):\n%s", s, d)
				}
				if want := doneBatch(s, len(events)); doneAt != want {
					t.Errorf("batches %v: done at %d, want %d", s, doneAt, want)
				}
			}
		})
	}
}

// doneBatch is the batch holding the last event (the done line).
func doneBatch(sizes []int, n int) int {
	seen := 0
	for i, k := range sizes {
		seen += k
		if seen >= n {
			return i
		}
	}
	return len(sizes)
}

func TestDecodeStream_Typed(t *testing.T) {
	events := lines(string(readFile(t, "stream/tool_call.ndjson")))
	a := New()
	var st sdk.State
	var got []canon.ChatChunk
	for _, ev := range events {
		var out []canon.ChatChunk
		c := &sdk.Call{}
		if err := a.DecodeStream(c, &st, [][]byte{ev}, &out); err != nil {
			t.Fatal(err)
		}
		got = append(got, out...)
		// The adapter's blob buffer holds what it last Set, which is also
		// what the host keeps when a call sets nothing.
		st = sdk.State{In: clone(a.state)}
	}
	reasoning := canon.ChatChunk{Model: "qwen3", Created: 1761599073, Choices: []canon.ChunkChoice{{
		Delta: canon.Delta{Role: canon.RoleAssistant, Reasoning: "I need the weather tools."}}}}
	call1 := canon.ChatChunk{Model: "qwen3", Created: 1761599074, Choices: []canon.ChunkChoice{{
		Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{
			{Index: 0, ID: "call_k3v9x2ab", Name: "get_temperature", Arguments: `{"city":"New York"}`}}}}}}
	call23 := canon.ChatChunk{Model: "qwen3", Created: 1761599074, Choices: []canon.ChunkChoice{{
		Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{
			{Index: 1, ID: "call_1", Name: "get_conditions", Arguments: `{"city":"New York","days":[1,2]}`},
			{Index: 2, ID: "call_2", Name: "get_time", Arguments: `{}`}}}}}}
	finish := canon.ChatChunk{Model: "qwen3", Created: 1761599074, Choices: []canon.ChunkChoice{{
		FinishReason: canon.FinishToolCalls}}}
	use := canon.ChatChunk{Model: "qwen3", Created: 1761599074,
		Usage: &canon.Usage{PromptTokens: 219, CompletionTokens: 68, TotalTokens: 287}}
	if d := cmp.Diff([]canon.ChatChunk{reasoning, call1, call23, finish, use}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestDecodeStream_Errors(t *testing.T) {
	const text = `{"model":"m","message":{"content":"a"},"done":false}`
	for _, tc := range []struct {
		name   string
		state  []byte
		events []string
		want   string
	}{
		{"error line", nil, []string{text, `{"error":"an error was encountered while running the model"}`},
			"backend stream error: an error was encountered while running the model"},
		{"error object", nil, []string{`{"error":{"message":"boom"}}`}, "backend stream error: boom"},
		{"not json", nil, []string{"data: {}"}, "invalid JSON"},
		{"not object", nil, []string{`"x"`}, "not a JSON object"},
		{"bad message", nil, []string{`{"message":[1]}`}, "message is not an object"},
		{"bad tool call", nil, []string{`{"message":{"tool_calls":[{"function":{}}]}}`}, "function.name is missing"},
		{"state version", []byte{2, 0, 0}, []string{text}, "corrupt stream state"},
		{"state flags", []byte{1, 4, 0}, []string{text}, "corrupt stream state"},
		{"state trailing", []byte{1, 0, 0, 0}, []string{text}, "corrupt stream state"},
		{"state truncated", []byte{1, 0}, []string{text}, "corrupt stream state"},
		{"state tools", []byte{1, 0, 0xff, 0xff, 0xff, 0x7f}, []string{text}, "corrupt stream state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ev [][]byte
			for _, e := range tc.events {
				ev = append(ev, []byte(e))
			}
			r := newHarness().call(t, abi.OpStreamDecode, abi.FlagFirst, tc.state, items(ev))
			if r.Status != abi.StatusBadInput || !strings.Contains(r.Error, tc.want) {
				t.Errorf("status %s %q, want bad_input containing %q", r.Status, r.Error, tc.want)
			}
		})
	}
}

func TestDecodeStream_AfterDone(t *testing.T) {
	h := newHarness()
	ev := lines(string(readFile(t, "stream/text.ndjson")))
	ev = append(ev, []byte(`{"model":"m","message":{"content":"late"},"done":false}`))
	r := h.call(t, abi.OpStreamDecode, abi.FlagFirst, nil, items(ev))
	if r.Status != abi.StatusOK || !r.done() {
		t.Fatalf("status %s %q done %v", r.Status, r.Error, r.done())
	}
	if bytes.Contains(r.Payload, []byte("late")) {
		t.Error("a line after done:true was decoded")
	}
	// The host's closing call with no events: still done, nothing emitted.
	r2 := h.call(t, abi.OpStreamDecode, abi.FlagEnd, r.State, nil)
	if r2.Status != abi.StatusOK || !r2.done() || len(r2.Payload) != 0 || !r2.keepState() {
		t.Errorf("end call: status %s done %v payload %q keep %v", r2.Status, r2.done(), r2.Payload, r2.keepState())
	}
}

func TestDecodeStream_NullError(t *testing.T) {
	r := newHarness().call(t, abi.OpStreamDecode, abi.FlagFirst, nil,
		items([][]byte{[]byte(`{"error":null,"message":{"content":"ok"},"done":false}`)}))
	if r.Status != abi.StatusOK || !bytes.Contains(r.Payload, []byte(`"content":"ok"`)) {
		t.Errorf("status %s %q payload %q", r.Status, r.Error, r.Payload)
	}
}

func TestDecodeStream_StateOnlyWhenChanged(t *testing.T) {
	h := newHarness()
	r := h.call(t, abi.OpStreamDecode, abi.FlagFirst, nil, items([][]byte{[]byte(`{"message":{"content":""},"done":false}`), {}}))
	if r.Status != abi.StatusOK || !r.keepState() || len(r.Payload) != 0 {
		t.Errorf("status %s keep %v payload %q", r.Status, r.keepState(), r.Payload)
	}
}

func TestStreamState_RoundTrip(t *testing.T) {
	for _, s := range []streamState{{}, {roleSent: true}, {done: true, tools: 3}, {roleSent: true, done: true, tools: maxTools},
		{think: thinktag.State{Mode: thinktag.Think, Started: true, Pending: " </thi"}}, {roleSent: true, think: thinktag.State{Mode: thinktag.Plain}}} {
		var got streamState
		if err := got.load(s.append(nil)); err != nil || got != s {
			t.Errorf("%+v: got %+v, %v", s, got, err)
		}
	}
}

// TestDecodeStream_ThinkSplitAnywhere: with think unset a model's
// <think> block arrives in content; cut into three lines at every pair of
// character offsets, one line per call with the state carried, it
// reassembles to what the non-streamed response gives for the whole
// content.
func TestDecodeStream_ThinkSplitAnywhere(t *testing.T) {
	for _, content := range []string{
		"<think>\nGreet back.\n</think>\n\nHello!",
		" <think>é</think>",
		"<think>cut off </thin",
		"No <think> here",
	} {
		wantR, wantC := thinktag.Split(content)
		onRune := func(k int) bool { return k == len(content) || utf8.RuneStart(content[k]) }
		for i := 0; i <= len(content); i++ {
			for j := i; j <= len(content); j++ {
				if !onRune(i) || !onRune(j) {
					continue
				}
				var events [][]byte
				for _, p := range []string{content[:i], content[i:j], content[j:]} {
					s, _ := json.Marshal(p)
					events = append(events, []byte(`{"model":"m","message":{"role":"assistant","content":`+string(s)+`},"done":false}`))
				}
				events = append(events, []byte(`{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}`))
				out, _ := runStream(t, events, []int{1, 1, 1, 1})
				var chunks []canon.ChatChunk
				if err := json.Unmarshal(out, &chunks); err != nil {
					t.Fatal(err)
				}
				var r, c string
				for _, ch := range chunks {
					for _, cc := range ch.Choices {
						r += cc.Delta.Reasoning
						c += cc.Delta.Content
					}
				}
				if r != wantR || c != wantC {
					t.Fatalf("%q cut at %d,%d: reasoning %q content %q; want %q, %q", content, i, j, r, c, wantR, wantC)
				}
			}
		}
	}
}

// Bytes held back as a possible tag go out when the stream ends, even on a
// done line without a message.
func TestDecodeStream_ThinkFlushAtDone(t *testing.T) {
	for _, done := range []string{
		`{"model":"m","message":{"role":"assistant","content":""},"done":true}`,
		`{"model":"m","done":true}`,
	} {
		out, _ := runStream(t, [][]byte{[]byte(`{"model":"m","message":{"role":"assistant","content":" <thi"},"done":false}`), []byte(done)}, []int{1, 1})
		var chunks []canon.ChatChunk
		if err := json.Unmarshal(out, &chunks); err != nil {
			t.Fatal(err)
		}
		content := ""
		for _, ch := range chunks {
			for _, cc := range ch.Choices {
				content += cc.Delta.Content
			}
		}
		if content != " <thi" {
			t.Errorf("%s: content %q, want \" <thi\"", done, content)
		}
	}
}
