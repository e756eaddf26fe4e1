package anthropic

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	anth "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// streamMeta is what the gateway passes to every stream call; include_usage
// is "0" on purpose: Anthropic streams report usage whatever it says.
var streamMeta = []string{"route", RouteMessages, "id", "chatcmpl-test123", "model", "client-model", "created", "1700000000", "include_usage", "0"}

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
// chunks across calls gives the same bytes, and reads the result with the
// anthropic-sdk-go accumulator.
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
			checkStreamWithSDK(t, sc, whole)
		})
	}
}

// accumulate reads a stream's bytes as anthropic-sdk-go does.
func accumulate(t *testing.T, b []byte) (anth.Message, []sseEvent) {
	t.Helper()
	evs := sseEvents(t, b)
	var acc anth.Message
	for _, ev := range evs {
		var u anth.MessageStreamEventUnion
		if err := json.Unmarshal([]byte(ev.data), &u); err != nil {
			t.Fatalf("%s: %v", ev.data, err)
		}
		if err := acc.Accumulate(u); err != nil {
			t.Fatalf("accumulate %s: %v", ev.data, err)
		}
	}
	return acc, evs
}

// checkStreamWithSDK checks the event order and that the SDK's
// accumulated message holds what the canonical chunks said.
func checkStreamWithSDK(t *testing.T, sc streamCase, b []byte) {
	t.Helper()
	acc, evs := accumulate(t, b)
	if len(evs) < 4 || evs[0].name != "message_start" || evs[1].name != "ping" ||
		evs[len(evs)-2].name != "message_delta" || evs[len(evs)-1].name != "message_stop" {
		t.Fatalf("event order %v", evs)
	}
	open := -1
	for _, ev := range evs[2 : len(evs)-2] {
		var e struct{ Index int }
		_ = json.Unmarshal([]byte(ev.data), &e)
		switch ev.name {
		case "content_block_start":
			if open >= 0 {
				t.Fatalf("block %d starts while %d is open", e.Index, open)
			}
			open = e.Index
		case "content_block_delta", "content_block_stop":
			if e.Index != open {
				t.Fatalf("%s for block %d, open %d", ev.name, e.Index, open)
			}
			if ev.name == "content_block_stop" {
				open = -1
			}
		default:
			t.Fatalf("unexpected event %s", ev.name)
		}
	}
	if open >= 0 {
		t.Fatalf("block %d never stopped", open)
	}
	// What the chunks said, choice 0 only.
	var thinking, text string
	args := map[int]string{}
	var order []int
	var usage canon.Usage
	var fr canon.FinishReason
	for _, ch := range sc.chunks {
		for _, c := range ch.Choices {
			if c.Index != 0 {
				continue
			}
			thinking += c.Delta.Reasoning
			text += c.Delta.Content
			for _, tc := range c.Delta.ToolCalls {
				if _, ok := args[tc.Index]; !ok {
					order = append(order, tc.Index)
				}
				args[tc.Index] += tc.Arguments
			}
			if c.FinishReason != "" {
				fr = c.FinishReason
			}
		}
		if ch.Usage != nil {
			usage = *ch.Usage
		}
	}
	var gotThinking, gotText string
	var calls []anth.ToolUseBlock
	for _, blk := range acc.Content {
		switch v := blk.AsAny().(type) {
		case anth.ThinkingBlock:
			gotThinking += v.Thinking
		case anth.TextBlock:
			gotText += v.Text
		case anth.ToolUseBlock:
			calls = append(calls, v)
		}
	}
	if gotThinking != thinking || gotText != text || len(calls) != len(order) {
		t.Errorf("accumulated thinking %q text %q calls %d; chunks %q %q %d", gotThinking, gotText, len(calls), thinking, text, len(order))
	}
	for i, idx := range order {
		if i < len(calls) && json.Valid([]byte(args[idx])) && !jsonSame(calls[i].Input, []byte(args[idx])) {
			t.Errorf("call %d input %s, streamed %s", i, calls[i].Input, args[idx])
		}
	}
	// The accumulated message sent back as history decodes to what was
	// streamed.
	body, err := json.Marshal(anth.MessageNewParams{Model: "m", MaxTokens: 1, Messages: []anth.MessageParam{
		anth.NewUserMessage(anth.NewTextBlock("q")), acc.ToParam()}})
	if err != nil {
		t.Fatal(err)
	}
	if req, err := decode(t, string(body)); err != nil || len(req.Messages) != 2 || req.Messages[1].Reasoning != thinking ||
		req.Messages[1].Text() != text || len(req.Messages[1].ToolCalls) != len(order) {
		t.Errorf("history %s decodes to %+v (%v)", body, req, err)
	}
	if want := stopReason(fr, len(order) > 0); string(acc.StopReason) != want {
		t.Errorf("stop_reason %q want %q", acc.StopReason, want)
	}
	if acc.ID != "msg_test123" || acc.Model != "client-model" ||
		acc.Usage.InputTokens+acc.Usage.CacheReadInputTokens != int64(usage.PromptTokens) ||
		acc.Usage.OutputTokens != int64(usage.CompletionTokens) {
		t.Errorf("id %q model %q usage %+v; canonical usage %+v", acc.ID, acc.Model, acc.Usage, usage)
	}
}

// TestEncodeStream_EndOnly: a stream whose only call is the end call (the
// backend sent nothing) is still a whole, well-formed message.
func TestEncodeStream_EndOnly(t *testing.T) {
	s := &streamer{t: t, p: newPlugin(), meta: streamMeta}
	s.send(abi.FlagFirst|abi.FlagEnd, nil)
	acc, evs := accumulate(t, s.out)
	if len(evs) != 4 || acc.StopReason != "end_turn" || len(acc.Content) != 0 {
		t.Fatalf("%s", s.out)
	}
	// Calls after message_stop write nothing.
	before := len(s.out)
	s.send(abi.FlagEnd, []canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "late"}}}}})
	if len(s.out) != before {
		t.Fatalf("wrote after message_stop: %s", s.out[before:])
	}
}

// TestEncodeStream_StateKept: a call that changes nothing keeps the blob.
func TestEncodeStream_StateKept(t *testing.T) {
	s := &streamer{t: t, p: newPlugin(), meta: streamMeta}
	s.send(abi.FlagFirst, []canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "a"}}}}})
	if r := s.send(0, []canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "b"}}}}}); r.Flags&abi.ResultStateKeep == 0 {
		t.Fatal("a text delta in the open text block changed the state")
	}
	if !strings.Contains(string(s.out), `"text_delta","text":"b"`) {
		t.Fatalf("%s", s.out)
	}
}

func TestEncodeStream_CorruptState(t *testing.T) {
	p := newPlugin()
	var sw sdkStateWriter
	good := (&streamState{started: true, kind: blockText, blocks: 1}).encode(&sw.w)
	for _, st := range [][]byte{{9, 9}, {stateVersion}, {stateVersion, 0x80}, append(bytes.Clone(good), 0),
		{stateVersion, 0, blockTool + 1, 1, 0, 0, 0, 0, 0, 0}, {stateVersion, 0, blockText, 0, 0, 0, 0, 0, 0, 0},
		{stateVersion, 0, 0, 0, 0, 0, 9, 0, 0, 0}, {stateVersion, 64, 0, 0, 0, 0, 0, 0, 0, 0}} {
		r := call(t, p, abi.OpStreamEncode, 0, st, nil, streamMeta...)
		if r.Status != abi.StatusBadInput || !strings.Contains(r.Error, "corrupt stream state") {
			t.Errorf("state %v: %s %s", st, r.Status, r.Error)
		}
	}
	var s streamState
	if err := s.decode(good); err != nil || s.kind != blockText || !s.started {
		t.Fatalf("%+v %v", s, err)
	}
}
