package ollamaapi

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

// result is a copy of an abi.Result (whose slices alias the plugin's
// buffer until the next call).
type result struct {
	Status  abi.Status
	Flags   uint32
	State   []byte
	Meta    map[string]string
	Payload []byte
	Error   string
}

func newPlugin() *sdk.Plugin { return sdk.NewTranslator(Manifest(), New()) }

// input lays out one call as the host does. meta is key, value, ...
func input(flags uint32, state, payload []byte, meta ...string) []byte {
	var m []byte
	for i := 0; i+1 < len(meta); i += 2 {
		m = abi.AppendMeta(m, meta[i], meta[i+1])
	}
	in := make([]byte, abi.HeaderSize, abi.HeaderSize+len(state)+len(m)+len(payload))
	abi.PutHeader(in, abi.Header{Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(m)), PayloadLen: uint32(len(payload)), RequestID: 7})
	return append(append(append(in, state...), m...), payload...)
}

// call runs one op through the SDK dispatcher exactly as the wasm exports
// do (sdktest.Harness.Call). Only the meta given is sent (no defaults), as
// these tests pin what is needed.
func call(t testing.TB, p *sdk.Plugin, op abi.Op, flags uint32, state, payload []byte, meta ...string) result {
	t.Helper()
	r := sdktest.New(t, p).Call(op, sdktest.NoDefaults(), sdktest.Flags(flags), sdktest.State(state),
		sdktest.Payload(payload), sdktest.Meta(meta...))
	return result{Status: r.Status, Flags: r.Flags, State: r.State, Meta: r.Meta, Payload: r.Payload, Error: r.Error}
}

// decode runs request_decode on body for route and returns the canonical
// request.
func decode(t testing.TB, route, body string) (canon.ChatRequest, result) {
	t.Helper()
	r := call(t, newPlugin(), abi.OpRequestDecode, 0, nil, []byte(body), abi.MetaRoute, route, abi.MetaKind, "chat")
	var req canon.ChatRequest
	if r.Status == abi.StatusOK {
		if err := req.DecodeJSON(r.Payload); err != nil {
			t.Fatalf("canonical output: %v\n%s", err, r.Payload)
		}
	}
	return req, r
}

// chunkList encodes chunks as an ABI item list (sdktest.ChunkList).
func chunkList(chunks []canon.ChatChunk) []byte { return sdktest.ChunkList(chunks) }

// gwMeta is the meta the gateway passes to response and stream encode.
var gwMeta = []string{abi.MetaID, "chatcmpl-gw1", abi.MetaModel, "llama3.2:3b", abi.MetaCreated, "1764528000"}

func routeMeta(route string) []string {
	return append([]string{abi.MetaRoute, route, abi.MetaKind, "chat"}, gwMeta...)
}

// runStream is sdktest.StreamCuts: chunks cut into calls at cuts.
func runStream(t testing.TB, p *sdk.Plugin, meta []string, chunks []canon.ChatChunk, cuts []int, endAlone bool) []byte {
	t.Helper()
	return sdktest.StreamCuts(t, p, meta, chunks, cuts, endAlone)
}

// ndjson splits NDJSON output into lines, checking each is one JSON object.
func ndjson(t testing.TB, b []byte) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for len(b) > 0 {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			t.Fatalf("unterminated line %q", b)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		lines = append(lines, m)
		b = rest
	}
	return lines
}

// golden compares got with testdata/name, rewriting it under -update
// (sdktest.Golden).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	sdktest.Golden(t, filepath.Join("testdata", name), got)
}

// goldenJSON compares JSON documents as values with testdata/name
// (sdktest.GoldenJSON).
func goldenJSON(t *testing.T, name string, got []byte) {
	t.Helper()
	sdktest.GoldenJSON(t, filepath.Join("testdata", name), got)
}

// testFiles lists testdata/dir/*suffix without the suffix
// (sdktest.TestdataFiles).
func testFiles(t testing.TB, dir, suffix string) []string {
	t.Helper()
	return sdktest.TestdataFiles(t, dir, suffix)
}
