package ollamaapi

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// FuzzDecodeRequest: any body, on either route, gives a canonical request
// or a BadInput, never a plugin error (a panic); the canonical output
// always reads back, and tool-call arguments are JSON objects.
func FuzzDecodeRequest(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "requests", "*.req.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, filepath.Base(name)[0] == 'g')
	}
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"\u0001":[1,{"y":null}]}}}]},{"role":"tool","content":"r"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x","images":["UklGRgAAAABXRUJQ","data:image/gif;base64,R0lG"]}],"format":{"type":"object"}}`,
		`{"model":"\u00e9\ud800","prompt":"\u0000","options":{"stop":"x","num_predict":-2,"top_k":0},"think":"low","keep_alive":-1}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	p := newPlugin()
	f.Fuzz(func(t *testing.T, body []byte, generate bool) {
		route := RouteChat
		if generate {
			route = RouteGenerate
		}
		r := call(t, p, abi.OpRequestDecode, 0, nil, body, abi.MetaRoute, route)
		switch r.Status {
		case abi.StatusOK:
			var req canon.ChatRequest
			if err := req.DecodeJSON(r.Payload); err != nil {
				t.Fatalf("canonical output does not read back: %v\n%s", err, r.Payload)
			}
			if req.Model == "" || len(req.Messages) == 0 {
				t.Fatalf("accepted a request without model or messages: %s", body)
			}
			for _, m := range req.Messages {
				for _, tc := range m.ToolCalls {
					if tc.ID == "" || len(tc.Arguments) == 0 {
						t.Fatalf("tool call %+v", tc)
					}
				}
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
		n := min(int(next()%6), len(script))
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
			tc := canon.ToolCallDelta{Index: int(b % 4), Arguments: text()}
			if b&4 != 0 {
				tc.ID = "id" + text()
			}
			if b&8 != 0 {
				tc.Name = "n" + text()
			}
			c.Delta.ToolCalls = append(c.Delta.ToolCalls, tc)
			if op%8 == 7 {
				c.Delta.ToolCalls = append(c.Delta.ToolCalls, canon.ToolCallDelta{Index: int(b>>4) % 3, Arguments: `{"k":` + text() + `}`})
			}
		case 3:
			c.FinishReason = [...]canon.FinishReason{canon.FinishStop, canon.FinishLength, canon.FinishToolCalls, "weird\""}[next()%4]
		case 4:
			ch.Usage = &canon.Usage{PromptTokens: int(next()), CompletionTokens: int(next())}
		case 5:
			c.Delta.Role = canon.RoleAssistant
		case 6:
			c.Delta.Content = text()
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
// panic; for any chunk sequence the output is NDJSON of JSON objects with
// one done:true line, last, and identical however the stream is split
// across calls.
func FuzzEncodeStream(f *testing.F) {
	var w sdk.StateWriter
	f.Add([]byte{}, []byte{0, 3, 'h', 'e', 'y', 2, 0x0c, 2, 'f', 'x', 3, 2, 4, 1, 2}, uint64(0x5), false)
	f.Add((&streamState{pending: true, pName: "f", pArgs: `{"a":`}).encode(&w), []byte{7, 0xff, 1, 'a', 2, 'b', 3}, uint64(1), true)
	f.Add([]byte{stateVersion, 0x80}, []byte{5, 6, 1, 'x'}, uint64(0), false)
	f.Add([]byte{stateVersion, 4, 0, 0, 0, 0, 2}, []byte{0, 1, 'z'}, uint64(3), true)
	p := newPlugin()
	f.Fuzz(func(t *testing.T, state, script []byte, cutBits uint64, generate bool) {
		route := RouteChat
		if generate {
			route = RouteGenerate
		}
		meta := routeMeta(route)
		chunks := genChunks(script)

		// Any state blob: OK or BadInput.
		r := call(t, p, abi.OpStreamEncode, abi.FlagEnd, state, chunkList(chunks), meta...)
		if r.Status != abi.StatusOK && r.Status != abi.StatusBadInput {
			t.Fatalf("state %x: status %s: %s", state, r.Status, r.Error)
		}
		// The script bytes as a raw chunk list payload.
		r = call(t, p, abi.OpStreamEncode, abi.FlagFirst, nil, script, meta...)
		if r.Status != abi.StatusOK && r.Status != abi.StatusBadInput {
			t.Fatalf("raw list: status %s: %s", r.Status, r.Error)
		}

		whole := runStream(t, p, meta, chunks, nil, false)
		var cuts []int
		for i := 1; i < len(chunks) && i < 64; i++ {
			if cutBits&(1<<i) != 0 {
				cuts = append(cuts, i)
			}
		}
		split := runStream(t, p, meta, chunks, cuts, cutBits&1 != 0)
		if !bytes.Equal(whole, split) {
			t.Fatalf("split %v changed the output:\n%s\nvs\n%s", cuts, whole, split)
		}
		lines := ndjson(t, whole)
		for i, l := range lines {
			if done := l["done"] == true; done != (i == len(lines)-1) {
				t.Fatalf("line %d of %d done=%v:\n%s", i, len(lines), l["done"], whole)
			}
			msg := l
			if !generate {
				msg, _ = l["message"].(map[string]any)
			}
			if calls, ok := msg["tool_calls"].([]any); ok {
				for _, c := range calls {
					if _, ok := c.(map[string]any)["function"].(map[string]any)["arguments"].(map[string]any); !ok {
						t.Fatalf("arguments not an object: %s", whole)
					}
				}
			}
		}
	})
}

// FuzzDecodeEmbeddingRequest: any body on either embedding route gives a
// canonical request with a model and input, or a BadInput; never a panic.
func FuzzDecodeEmbeddingRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"all-minilm","input":["Why is the sky blue?","Why is the grass green?"],"truncate":false,"dimensions":256}`,
		`{"model":"all-minilm","input":"x","keep_alive":"5m","options":{"num_ctx":8}}`,
		`{"model":"all-minilm","prompt":"Here is an article about llamas..."}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	p := newPlugin()
	f.Fuzz(func(t *testing.T, body []byte, legacy bool) {
		route := RouteEmbed
		if legacy {
			route = RouteEmbeddings
		}
		r := call(t, p, abi.OpEmbedRequestDecode, 0, nil, body, abi.MetaRoute, route)
		switch r.Status {
		case abi.StatusOK:
			var req canon.EmbeddingRequest
			if err := req.DecodeJSON(r.Payload); err != nil || req.Model == "" || len(req.Input) == 0 {
				t.Fatalf("canonical output %s: %v", r.Payload, err)
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
