package anthropic

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	anth "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// FuzzDecodeRequest: any body gives a canonical request or a BadInput,
// never a plugin error (a panic), and the canonical output always reads
// back.
func FuzzDecodeRequest(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "requests", "*.req.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{` + head + `,"thinking":{"type":"enabled","budget_tokens":1e9},` + user(`[{"type":"tool_result","tool_use_id":"x","is_error":true,"content":[{"type":"image","source":{"type":"url","url":"http://a"}}]}]`) + `}`,
		`{` + head + `,"system":[{"type":"text","text":""}],"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"i","name":"f","input":{"x":[1,{"y":null}]}}]}]}`,
		`{"model":"\u00e9\ud800","max_tokens":1.0,"messages":[{"role":"user","content":"\u0000"}],"stop_sequences":[""],"top_k":0}`,
	} {
		f.Add([]byte(s))
	}
	p := newPlugin()
	f.Fuzz(func(t *testing.T, body []byte) {
		r := call(t, p, abi.OpRequestDecode, 0, nil, body, "route", RouteMessages)
		switch r.Status {
		case abi.StatusOK:
			var req canon.ChatRequest
			if err := req.DecodeJSON(r.Payload); err != nil {
				t.Fatalf("canonical output does not read back: %v\n%s", err, r.Payload)
			}
			if req.Model == "" || len(req.Messages) == 0 || req.MaxTokens < 1 {
				t.Fatalf("accepted a request without model, messages or max_tokens: %s", body)
			}
		case abi.StatusBadInput:
			if r.Error == "" {
				t.Fatal("BadInput without a message")
			}
		default:
			t.Fatalf("status %s: %s", r.Status, r.Error)
		}
	})
}

// genChunks turns fuzz bytes into a canonical chunk sequence.
func genChunks(script []byte) []canon.ChatChunk {
	next := func() byte {
		if len(script) == 0 {
			return 0
		}
		b := script[0]
		script = script[1:]
		return b
	}
	text := func() string {
		n := int(next() % 6)
		n = min(n, len(script))
		s := string(script[:n])
		script = script[n:]
		return s
	}
	var chunks []canon.ChatChunk
	for len(script) > 0 && len(chunks) < 64 {
		op := next()
		ch := canon.ChatChunk{ID: "b", Model: "bm", Created: 3}
		c := canon.ChunkChoice{Index: int(op>>6) % 2}
		switch op % 8 {
		case 0:
			c.Delta.Content = text()
		case 1:
			c.Delta.Reasoning = text()
		case 2, 7:
			b := next()
			tc := canon.ToolCallDelta{Index: int(b%4) - int(b>>7)*70, Arguments: text()}
			if b&4 != 0 {
				tc.ID = "id" + text()
			}
			if b&8 != 0 {
				tc.Name = "n" + text()
			}
			c.Delta.ToolCalls = append(c.Delta.ToolCalls, tc)
			if op%8 == 7 {
				c.Delta.ToolCalls = append(c.Delta.ToolCalls, canon.ToolCallDelta{Index: int(b>>4) % 3, Arguments: text()})
			}
		case 3:
			c.FinishReason = [...]canon.FinishReason{canon.FinishStop, canon.FinishLength, canon.FinishToolCalls, "weird\""}[next()%4]
		case 4:
			ch.Usage = &canon.Usage{PromptTokens: int(next()), CompletionTokens: int(next()), CachedTokens: int(next() % 3)}
		case 5:
			c.Delta.Role = canon.RoleAssistant
		case 6:
			c.Delta.Content = text()
			c.Delta.Reasoning = text()
			ch.Usage = &canon.Usage{PromptTokens: 1}
		}
		if op%8 != 4 {
			ch.Choices = []canon.ChunkChoice{c}
		}
		chunks = append(chunks, ch)
	}
	return chunks
}

// FuzzEncodeStream: arbitrary state blobs give OK or BadInput, never a
// panic; for any chunk sequence the output is identical however the stream
// is split across calls, framed as Anthropic's events in their order, and
// the SDK's accumulator takes every event.
func FuzzEncodeStream(f *testing.F) {
	var w sdk.StateWriter
	f.Add([]byte{}, []byte{0, 3, 'h', 'e', 'y', 2, 0x0c, 2, 'f', 'x', 3, 2, 4, 1, 2}, uint64(0x5))
	f.Add((&streamState{started: true, kind: blockTool, blocks: 2, seen: 1}).encode(&w), []byte{7, 0xff, 1, 'a', 2, 'b', 3}, uint64(1))
	f.Add([]byte{stateVersion, 0x80}, []byte{5, 6, 1, 'x'}, uint64(0))
	f.Add([]byte{stateVersion, 0, 0, 0, 1}, []byte{0, 1, 'z'}, uint64(3))
	for _, name := range []string{"tool_use", "thinking", "back_and_forth"} {
		b, _ := os.ReadFile(filepath.Join("testdata", "streams", name+".json"))
		f.Add([]byte{}, b, uint64(0xaaaa))
	}
	p := newPlugin()
	f.Fuzz(func(t *testing.T, state, script []byte, cutBits uint64) {
		chunks := genChunks(script)

		// Any state blob: OK or BadInput.
		r := call(t, p, abi.OpStreamEncode, abi.FlagEnd, state, chunkList(chunks), streamMeta...)
		if r.Status != abi.StatusOK && r.Status != abi.StatusBadInput {
			t.Fatalf("state %x: status %s: %s", state, r.Status, r.Error)
		}
		// The script bytes as a raw chunk list payload.
		r = call(t, p, abi.OpStreamEncode, abi.FlagFirst, nil, script, streamMeta...)
		if r.Status != abi.StatusOK && r.Status != abi.StatusBadInput {
			t.Fatalf("raw list: status %s: %s", r.Status, r.Error)
		}

		whole := runStream(t, p, streamMeta, chunks, nil, false)
		var cuts []int
		for i := 1; i < len(chunks) && i < 64; i++ {
			if cutBits&(1<<i) != 0 {
				cuts = append(cuts, i)
			}
		}
		split := runStream(t, p, streamMeta, chunks, cuts, cutBits&1 != 0)
		if !bytes.Equal(whole, split) {
			t.Fatalf("split %v changed the output:\n%s\nvs\n%s", cuts, whole, split)
		}
		evs := sseEvents(t, whole)
		if len(evs) < 4 || evs[0].name != "message_start" || evs[1].name != "ping" ||
			evs[len(evs)-2].name != "message_delta" || evs[len(evs)-1].name != "message_stop" {
			t.Fatalf("event order: %s", whole)
		}
		var acc anth.Message
		open := -1
		for _, ev := range evs {
			var u anth.MessageStreamEventUnion
			if err := json.Unmarshal([]byte(ev.data), &u); err != nil {
				t.Fatalf("%s: %v", ev.data, err)
			}
			if err := acc.Accumulate(u); err != nil {
				t.Fatalf("accumulate %s: %v\n%s", ev.data, err, whole)
			}
			switch ev.name {
			case "content_block_start":
				if open >= 0 {
					t.Fatalf("two open blocks:\n%s", whole)
				}
				open = int(u.Index)
			case "content_block_delta", "content_block_stop":
				if int(u.Index) != open {
					t.Fatalf("%s for a block not open:\n%s", ev.name, whole)
				}
				if ev.name == "content_block_stop" {
					open = -1
				}
			}
		}
		if open >= 0 {
			t.Fatalf("block left open:\n%s", whole)
		}
	})
}
