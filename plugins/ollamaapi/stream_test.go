package ollamaapi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// loadChunks reads testdata/streams/name.json, an array of canonical chunks.
func loadChunks(t testing.TB, name string) []canon.ChatChunk {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "streams", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		t.Fatal(err)
	}
	chunks := make([]canon.ChatChunk, len(items))
	for i, it := range items {
		if err := chunks[i].DecodeJSON(it); err != nil {
			t.Fatalf("%s[%d]: %v", name, i, err)
		}
	}
	return chunks
}

// TestEncodeStream_Golden sends each stream one chunk per call, the
// trailer in its own call, and compares the NDJSON with the golden files.
func TestEncodeStream_Golden(t *testing.T) {
	for _, name := range testFiles(t, "streams", ".json") {
		chunks := loadChunks(t, name)
		cuts := make([]int, 0, len(chunks))
		for i := 1; i < len(chunks); i++ {
			cuts = append(cuts, i)
		}
		for _, route := range []string{RouteChat, RouteGenerate} {
			t.Run(name+"/"+route, func(t *testing.T) {
				out := runStream(t, newPlugin(), routeMeta(route), chunks, cuts, true)
				lines := ndjson(t, out)
				for i, l := range lines {
					if done := l["done"] == true; done != (i == len(lines)-1) {
						t.Fatalf("line %d done=%v: only the last line is done", i, l["done"])
					}
				}
				golden(t, filepath.Join("streams", name+"."+route+".ndjson"), out)
			})
		}
	}
}

// TestEncodeStream_SplitInvariance: however the chunks are split into
// calls, the bytes are the same (the state blob carries everything).
func TestEncodeStream_SplitInvariance(t *testing.T) {
	for _, name := range testFiles(t, "streams", ".json") {
		chunks := loadChunks(t, name)
		for _, route := range []string{RouteChat, RouteGenerate} {
			meta := routeMeta(route)
			want := runStream(t, newPlugin(), meta, chunks, nil, false)
			n := len(chunks)
			// every subset of cut points (n <= 8 here) and both trailer forms
			for mask := 0; mask < 1<<(n-1); mask++ {
				var cuts []int
				for i := 1; i < n; i++ {
					if mask&(1<<(i-1)) != 0 {
						cuts = append(cuts, i)
					}
				}
				for _, alone := range []bool{false, true} {
					if got := runStream(t, newPlugin(), meta, chunks, cuts, alone); !bytes.Equal(got, want) {
						t.Fatalf("%s/%s cuts %v alone %v:\n got %s\nwant %s", name, route, cuts, alone, got, want)
					}
				}
			}
		}
	}
}

// TestEncodeStream_AfterDone: calls after the trailer write nothing.
func TestEncodeStream_AfterDone(t *testing.T) {
	p := newPlugin()
	meta := routeMeta(RouteChat)
	chunks := loadChunks(t, "text")
	r := call(t, p, abi.OpStreamEncode, abi.FlagFirst|abi.FlagEnd, nil, chunkList(chunks), meta...)
	if r.Status != abi.StatusOK {
		t.Fatal(r.Status, r.Error)
	}
	again := call(t, p, abi.OpStreamEncode, abi.FlagEnd, r.State, chunkList(chunks), meta...)
	if again.Status != abi.StatusOK || len(again.Payload) != 0 || again.Flags&abi.ResultStateKeep == 0 {
		t.Fatalf("after done: %s %q flags %d", again.Status, again.Payload, again.Flags)
	}
}

func TestEncodeStream_CorruptState(t *testing.T) {
	p := newPlugin()
	var w sdk.StateWriter
	good := (&streamState{pending: true, pName: "f", pArgs: "{"}).encode(&w)
	for _, st := range [][]byte{{9}, {stateVersion}, {stateVersion, 0xff}, append(bytes.Clone(good), 0), good[:len(good)-1]} {
		r := call(t, p, abi.OpStreamEncode, 0, st, nil, routeMeta(RouteChat)...)
		if r.Status != abi.StatusBadInput {
			t.Errorf("state %x: %s %q", st, r.Status, r.Payload)
		}
	}
}

// TestStreamState_RoundTrip: what encode writes, decode reads back.
func TestStreamState_RoundTrip(t *testing.T) {
	for _, s := range []streamState{
		{},
		{done: true},
		{finish: "length", hasUsage: true, prompt: 7, eval: 1 << 40, calls: 3},
		{pending: true, pIndex: -1, pID: "id", pName: "n", pArgs: `{"a":`},
	} {
		var w sdk.StateWriter
		var got streamState
		if err := got.decode(s.encode(&w)); err != nil || got != s {
			t.Errorf("%+v: got %+v, %v", s, got, err)
		}
	}
}

// TestStream_MatchesResponse: a stream's lines, accumulated as the official
// client's users do, say what the non-streamed response says.
func TestStream_MatchesResponse(t *testing.T) {
	p := newPlugin()
	meta := routeMeta(RouteChat)
	out := runStream(t, p, meta, loadChunks(t, "tool_fragments"), nil, false)
	var content string
	var calls []any
	var last map[string]any
	for _, l := range ndjson(t, out) {
		msg := l["message"].(map[string]any)
		content += msg["content"].(string)
		if tc, ok := msg["tool_calls"].([]any); ok {
			calls = append(calls, tc...)
		}
		last = l
	}
	b, _ := json.Marshal(calls)
	want := `[{"function":{"arguments":{"location":"Paris"},"index":0,"name":"get_current_weather"},"id":"chatcmpl-tool-a"},` +
		`{"function":{"arguments":{"location":"Toronto"},"index":1,"name":"get_current_weather"},"id":"chatcmpl-tool-b"}]`
	if content != "" || string(b) != want {
		t.Fatalf("content %q calls %s", content, b)
	}
	if last["done_reason"] != "stop" || last["prompt_eval_count"] != 40.0 || last["eval_count"] != 22.0 {
		t.Fatalf("final line %v", last)
	}
}
