package vllm

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

var streamFiles = []string{"text.sse", "tools.sse", "reasoning.sse", "reasoning_new.sse", "repeated_header.sse", "think_tags.sse", "n2_logprobs.sse"}

// splits returns ways to batch events: all at once, one per call, one per
// call followed by an empty End call, and random batchings.
func splits(events [][]byte) map[string][][][]byte {
	out := map[string][][][]byte{"one call": {events}}
	var per [][][]byte
	for _, e := range events {
		per = append(per, [][]byte{e})
	}
	out["per event"] = per
	out["per event + empty end"] = append(append([][][]byte{}, per...), nil)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		var b [][][]byte
		for rest := events; len(rest) > 0; {
			n := 1 + r.IntN(min(4, len(rest)))
			b = append(b, rest[:n])
			rest = rest[n:]
		}
		out["random "+string(rune('a'+i))] = b
	}
	return out
}

// TestStreamSplitInvariance: whatever the batching, with the state carried
// between calls, the canonical output is byte-for-byte the same, and equal
// to the typed one-call decode.
func TestStreamSplitInvariance(t *testing.T) {
	for _, f := range streamFiles {
		t.Run(f, func(t *testing.T) {
			events := readSSE(t, f)
			var typed []canon.ChatChunk
			if err := New().DecodeStream(&sdk.Call{}, &sdk.State{}, events, &typed); err != nil {
				t.Fatal(err)
			}
			var want [][]byte
			for i := range typed {
				want = append(want, typed[i].AppendJSON(nil))
			}
			p := newPlugin()
			for name, batches := range splits(events) {
				got, done, msg := streamABI(t, p, batches)
				if msg != "" {
					t.Fatalf("%s: %s", name, msg)
				}
				if !done {
					t.Errorf("%s: [DONE] not reported", name)
				}
				if len(got) != len(want) {
					t.Fatalf("%s: %d chunks, want %d", name, len(got), len(want))
				}
				for i := range got {
					if !bytes.Equal(got[i], want[i]) {
						t.Errorf("%s: chunk %d\n got: %s\nwant: %s", name, i, got[i], want[i])
					}
				}
			}
		})
	}
}

func decodeFile(t *testing.T, f string) []canon.ChatChunk {
	t.Helper()
	got, done, msg := streamABI(t, newPlugin(), [][][]byte{readSSE(t, f)})
	if msg != "" || !done {
		t.Fatalf("%s: msg %q done %v", f, msg, done)
	}
	return decodeChunks(t, got)
}

func TestStreamText(t *testing.T) {
	got := decodeFile(t, "text.sse")
	const id, model, created = "chatcmpl-8d1f0c2b6a4e4f7e9b3a2c1d0e9f8a7b", "Qwen/Qwen3-8B", 1733000000
	mk := func(d canon.Delta, fr canon.FinishReason) canon.ChatChunk {
		return canon.ChatChunk{ID: id, Model: model, Created: created, Choices: []canon.ChunkChoice{{Delta: d, FinishReason: fr}}}
	}
	want := []canon.ChatChunk{mk(canon.Delta{Role: canon.RoleAssistant}, "")}
	for _, s := range []string{"Hello", "!", " How", " can", " I", " help", " you", " today", "? ", "é✓ \"quoted\"\n"} {
		want = append(want, mk(canon.Delta{Content: s}, ""))
	}
	want = append(want, mk(canon.Delta{}, canon.FinishStop))
	want = append(want, canon.ChatChunk{ID: id, Model: model, Created: created,
		Usage: &canon.Usage{PromptTokens: 21, CompletionTokens: 12, TotalTokens: 33, CachedTokens: 16}})
	if d := cmp.Diff(want, got, cmp.Transformer("emptyChoices", func(c []canon.ChunkChoice) []canon.ChunkChoice {
		if len(c) == 0 {
			return nil
		}
		return c
	})); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// aggregate replays a canonical stream the way a client would.
type aggregate struct {
	content, reasoning string
	calls              []canon.ToolCall
	ids, names         int // how many deltas carried an id / a name
	finish             canon.FinishReason
	usage              *canon.Usage
	roles              int
}

func replay(chunks []canon.ChatChunk) aggregate {
	var a aggregate
	for _, ch := range chunks {
		if ch.Usage != nil {
			a.usage = ch.Usage
		}
		for _, c := range ch.Choices {
			if c.Delta.Role != "" {
				a.roles++
			}
			a.content += c.Delta.Content
			a.reasoning += c.Delta.Reasoning
			for _, tc := range c.Delta.ToolCalls {
				for len(a.calls) <= tc.Index {
					a.calls = append(a.calls, canon.ToolCall{})
				}
				if tc.ID != "" {
					a.ids++
					a.calls[tc.Index].ID = tc.ID
				}
				if tc.Name != "" {
					a.names++
					a.calls[tc.Index].Name = tc.Name
				}
				a.calls[tc.Index].Arguments += tc.Arguments
			}
			if c.FinishReason != "" {
				a.finish = c.FinishReason
			}
		}
	}
	return a
}

func TestStreamToolCalls(t *testing.T) {
	a := replay(decodeFile(t, "tools.sse"))
	want := []canon.ToolCall{
		{ID: "chatcmpl-tool-5c1e0b0a9d8c4b7a", Name: "get_weather", Arguments: `{"city": "Paris", "unit": "celsius"}`},
		{ID: "chatcmpl-tool-9f8e7d6c5b4a4321", Name: "get_time", Arguments: `{"tz": "Europe/Paris"}`},
	}
	if d := cmp.Diff(want, a.calls); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	if a.ids != 2 || a.names != 2 || a.finish != canon.FinishToolCalls || a.content != "" || a.roles != 1 {
		t.Errorf("ids %d names %d finish %q content %q roles %d", a.ids, a.names, a.finish, a.content, a.roles)
	}
	if a.usage == nil || *a.usage != (canon.Usage{PromptTokens: 310, CompletionTokens: 42, TotalTokens: 352}) {
		t.Errorf("usage %+v", a.usage)
	}
}

func TestStreamRepeatedHeader(t *testing.T) {
	chunks := decodeFile(t, "repeated_header.sse")
	a := replay(chunks)
	if len(a.calls) != 1 || a.calls[0] != (canon.ToolCall{ID: "call_abc", Name: "search", Arguments: `{"q": "vllm metrics"}`}) {
		t.Errorf("calls %+v", a.calls)
	}
	if a.ids != 1 || a.names != 1 {
		t.Errorf("id/name emitted %d/%d times, want once", a.ids, a.names)
	}
	if a.finish != canon.FinishToolCalls {
		t.Errorf("finish %q: vLLM's stop after tool calls must become tool_calls", a.finish)
	}
}

func TestStreamReasoning(t *testing.T) {
	for _, tc := range []struct {
		file, reasoning, content string
		finish                   canon.FinishReason
		usage                    canon.Usage
	}{
		{"reasoning.sse", "Okay, the user asks 2+2.", "\n\n2 + 2 = 4.", canon.FinishLength,
			canon.Usage{PromptTokens: 12, CompletionTokens: 28, TotalTokens: 40, ReasoningTokens: 20}},
		{"reasoning_new.sse", "User wants a haiku.", "Autumn moon—\nquiet", canon.FinishStop,
			canon.Usage{PromptTokens: 80, CompletionTokens: 15, TotalTokens: 95}},
	} {
		chunks := decodeFile(t, tc.file)
		a := replay(chunks)
		if a.reasoning != tc.reasoning || a.content != tc.content || a.finish != tc.finish || a.usage == nil || *a.usage != tc.usage {
			t.Errorf("%s: reasoning %q content %q finish %q usage %+v", tc.file, a.reasoning, a.content, a.finish, a.usage)
		}
		// Reasoning strictly precedes content.
		seenContent := false
		for _, ch := range chunks {
			for _, c := range ch.Choices {
				if c.Delta.Content != "" {
					seenContent = true
				}
				if c.Delta.Reasoning != "" && seenContent {
					t.Errorf("%s: reasoning after content", tc.file)
				}
			}
		}
	}
}

func TestStreamErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"error_new.sse", "backend stream error: The engine is dead"},
		{"error_old.sse", "backend stream error: Request aborted"},
	} {
		events := readSSE(t, tc.file)
		var chunks []canon.ChatChunk
		err := New().DecodeStream(&sdk.Call{}, &sdk.State{}, events, &chunks)
		var ie *sdk.InputError
		if err == nil || !asInputError(err, &ie) || ie.Msg != tc.want {
			t.Errorf("%s: err = %v, want %q", tc.file, err, tc.want)
		}
		// Event by event: the chunks before the error come out, then the error.
		got, _, msg := streamABI(t, newPlugin(), [][][]byte{events[:len(events)-1], events[len(events)-1:]})
		if msg != "bad_input: "+tc.want || len(got) != len(events)-1 {
			t.Errorf("%s: ABI msg %q, %d chunks", tc.file, msg, len(got))
		}
	}
	for _, ev := range []string{`{"choices":`, `[1]`, `"str"`, `data: {}`} {
		var chunks []canon.ChatChunk
		err := New().DecodeStream(&sdk.Call{}, &sdk.State{}, [][]byte{[]byte(ev)}, &chunks)
		var ie *sdk.InputError
		if err == nil || !asInputError(err, &ie) || !strings.HasPrefix(ie.Msg, "backend stream") {
			t.Errorf("%q: err = %v", ev, err)
		}
	}
}

func TestStreamEdgeCases(t *testing.T) {
	ev := func(s ...string) [][]byte {
		var out [][]byte
		for _, e := range s {
			out = append(out, []byte(e))
		}
		return out
	}
	p := newPlugin()
	// Blank payloads and empty deltas produce nothing; events after [DONE]
	// are ignored; [DONE] with whitespace still ends the stream.
	got, done, msg := streamABI(t, p, [][][]byte{ev(
		``, `  `,
		`{"id":"a","choices":[{"index":0,"delta":{},"finish_reason":null}]}`,
		`{"id":"a","choices":[{"index":0,"delta":{"content":""}}]}`,
		`{"id":"a","choices":[]}`,
		`{"id":"a","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]}}]}`,
		" [DONE]\n",
		`{"id":"a","choices":[{"index":0,"delta":{"content":"late"}}]}`,
	)})
	if msg != "" || !done || len(got) != 0 {
		t.Errorf("msg %q done %v chunks %s", msg, done, got)
	}

	// Two choices (n=2) keep their own tool-call state and finish reasons.
	events := ev(
		`{"id":"b","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":"{"}}]}},{"index":1,"delta":{"role":"assistant","content":"hi"}}]}`,
		`{"id":"b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":"}"}}]}}]}`,
		`{"id":"b","choices":[{"index":1,"delta":{},"finish_reason":"stop"},{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`{"id":"b","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
		`[DONE]`,
	)
	for name, batches := range splits(events) {
		got, done, msg := streamABI(t, p, batches)
		if msg != "" || !done {
			t.Fatalf("%s: %q", name, msg)
		}
		chunks := decodeChunks(t, got)
		if len(chunks) != 4 {
			t.Fatalf("%s: %d chunks", name, len(chunks))
		}
		fin := chunks[2].Choices
		if len(fin) != 2 || fin[0].Index != 1 || fin[0].FinishReason != canon.FinishStop || fin[1].Index != 0 || fin[1].FinishReason != canon.FinishToolCalls {
			t.Errorf("%s: finish chunk %+v", name, fin)
		}
		if tc := chunks[1].Choices[0].Delta.ToolCalls; len(tc) != 1 || tc[0].ID != "" || tc[0].Name != "" || tc[0].Arguments != "}" {
			t.Errorf("%s: repeated header not dropped: %+v", name, tc)
		}
	}
}

func TestStreamState(t *testing.T) {
	p := newPlugin()
	// The first content records that the choice's content is plain (not
	// <think>); later content-only events leave the state alone (no copy
	// for the host).
	content := eventList([][]byte{[]byte(`{"id":"a","choices":[{"index":0,"delta":{"content":"x"}}]}`)})
	r := callOp(t, p, abi.OpStreamDecode, abi.FlagFirst, nil, nil, content)
	if r.Status != abi.StatusOK || r.Flags&abi.ResultStateKeep != 0 || !bytes.Equal(r.State, PlainState()) {
		t.Errorf("first content event: status %s flags %b state %v", r.Status, r.Flags, r.State)
	}
	r = callOp(t, p, abi.OpStreamDecode, 0, PlainState(), nil, content)
	if r.Status != abi.StatusOK || r.Flags&abi.ResultStateKeep == 0 {
		t.Errorf("content event: status %s flags %b", r.Status, r.Flags)
	}
	// Corrupt state is a plugin-side error, not a crash.
	for _, st := range [][]byte{{9}, {1, 5}, {1, 1, 0, 0}, {1, 0, 7}, {1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		{2, 0}, {2, 0, 1, 0, 9, 0, 0}, {2, 0, 1, 0, 1, 0, 5, 'a'}, {2, 0, 0xff, 0x0f}} {
		r := callOp(t, p, abi.OpStreamDecode, 0, st, nil, eventList([][]byte{[]byte(`[DONE]`)}))
		if r.Status != abi.StatusPluginError || !strings.Contains(r.Error, "corrupt stream state") {
			t.Errorf("state %v: %s %q", st, r.Status, r.Error)
		}
	}
	// The first call of a stream ignores any state the host passed.
	if r := callOp(t, p, abi.OpStreamDecode, abi.FlagFirst, []byte{9, 9}, nil, eventList([][]byte{[]byte(`[DONE]`)})); r.Status != abi.StatusOK {
		t.Errorf("first call with stale state: %s %q", r.Status, r.Error)
	}
	// The tracked set is bounded.
	a := New()
	var events [][]byte
	for i := 0; i < maxTracked+50; i++ {
		events = append(events, []byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":`+itoa(i)+`,"id":"c","function":{"name":"f"}}]}}]}`))
	}
	var chunks []canon.ChatChunk
	if err := a.DecodeStream(&sdk.Call{}, &sdk.State{}, events, &chunks); err != nil {
		t.Fatal(err)
	}
	if len(a.calls) != maxTracked || len(chunks) != maxTracked+50 {
		t.Errorf("tracked %d, chunks %d", len(a.calls), len(chunks))
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// reassemble concatenates each choice's reasoning and content.
func reassemble(chunks []canon.ChatChunk) (reasoning, content map[int]string) {
	reasoning, content = map[int]string{}, map[int]string{}
	for _, ch := range chunks {
		for _, c := range ch.Choices {
			reasoning[c.Index] += c.Delta.Reasoning
			content[c.Index] += c.Delta.Content
		}
	}
	return reasoning, content
}

func TestStreamThinkTags(t *testing.T) {
	got := decodeFile(t, "think_tags.sse")
	r, c := reassemble(got)
	if r[0] != "Let me think." || c[0] != "Hi there!" {
		t.Errorf("reasoning %q content %q", r[0], c[0])
	}
	for _, ch := range got {
		for _, cc := range ch.Choices {
			if strings.Contains(cc.Delta.Content+cc.Delta.Reasoning, "think>") {
				t.Errorf("a tag leaked: %+v", cc.Delta)
			}
		}
	}
}

// contentEvents streams content as vLLM would, cut at the given offsets,
// for choice 0, the last event carrying finish_reason.
func contentEvents(content string, cuts []int) [][]byte {
	ev := func(delta, finish string) []byte {
		return []byte(`{"id":"c","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`)
	}
	events := [][]byte{ev(`{"role":"assistant","content":""}`, "null")}
	prev := 0
	for _, k := range append(cuts, len(content)) {
		s, _ := json.Marshal(content[prev:k])
		events = append(events, ev(`{"content":`+string(s)+`}`, "null"))
		prev = k
	}
	return append(events, ev(`{}`, `"stop"`), []byte("[DONE]"))
}

// TestStreamThinkSplitAnywhere: content cut into three events at every
// pair of character offsets (a tag cut at any byte), one event per call with the state carried between
// calls, reassembles to what the non-streamed response gives for the whole
// content (splitThink).
func TestStreamThinkSplitAnywhere(t *testing.T) {
	p := newPlugin()
	for _, content := range []string{
		"<think>\nLet me think.\n</think>\n\nHi there!",
		"  <think>ok</think>",
		"<think>cut off </thin",
		"No thinking here, <think> mid-text stays.",
		"<thinking>",
		"Ünïcödé <think>",
		"<think>é</think>ü",
	} {
		wantR, wantC := splitThink(content)
		// JSON strings hold characters: cuts fall between them.
		onRune := func(k int) bool { return k == len(content) || utf8.RuneStart(content[k]) }
		for i := 0; i <= len(content); i++ {
			for j := i; j <= len(content); j++ {
				if !onRune(i) || !onRune(j) {
					continue
				}
				events := contentEvents(content, []int{i, j})
				var batches [][][]byte
				for _, e := range events {
					batches = append(batches, [][]byte{e})
				}
				out, _, msg := streamABI(t, p, batches)
				if msg != "" {
					t.Fatal(msg)
				}
				r, c := reassemble(decodeChunks(t, out))
				if r[0] != wantR || c[0] != wantC {
					t.Fatalf("%q cut at %d,%d: reasoning %q content %q; want %q, %q", content, i, j, r[0], c[0], wantR, wantC)
				}
			}
		}
	}
}

func TestStreamLogprobsN2(t *testing.T) {
	got := decodeFile(t, "n2_logprobs.sse")
	_, c := reassemble(got)
	if c[0] != "Hi!" || c[1] != "Hello" {
		t.Errorf("content %v", c)
	}
	var lps []string
	finish := map[int]canon.FinishReason{}
	for _, ch := range got {
		for _, cc := range ch.Choices {
			if cc.Logprobs != nil {
				lps = append(lps, string(cc.Logprobs))
			}
			if cc.FinishReason != "" {
				finish[cc.Index] = cc.FinishReason
			}
		}
	}
	want := []string{
		`{"content":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-0.25,"bytes":[72,105]}]}]}`,
		`{"content":[{"token":"Hello","logprob":-1.5,"bytes":[72,101,108,108,111],"top_logprobs":[{"token":"Hello","logprob":-1.5,"bytes":[72,101,108,108,111]}]}]}`,
		`{"content":[{"token":"!","logprob":-0.0001,"bytes":[33],"top_logprobs":[{"token":"!","logprob":-0.0001,"bytes":[33]}]}]}`,
	}
	if d := cmp.Diff(want, lps); d != "" {
		t.Errorf("logprobs (-want +got):\n%s", d)
	}
	if finish[0] != canon.FinishStop || finish[1] != canon.FinishLength {
		t.Errorf("finish %v", finish)
	}
}
