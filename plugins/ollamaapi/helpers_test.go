package ollamaapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

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

// call runs one op through the SDK dispatcher exactly as the wasm exports do.
func call(t testing.TB, p *sdk.Plugin, op abi.Op, flags uint32, state, payload []byte, meta ...string) result {
	t.Helper()
	r, err := abi.ParseResult(p.Call(op, input(flags, state, payload, meta...)))
	if err != nil {
		t.Fatalf("%s: parse result: %v", op, err)
	}
	return copyResult(t, r)
}

func copyResult(t testing.TB, r abi.Result) result {
	t.Helper()
	res := result{
		Status:  r.Status,
		Flags:   r.Flags,
		State:   bytes.Clone(r.State),
		Payload: bytes.Clone(r.Payload),
		Error:   string(r.Error),
		Meta:    map[string]string{},
	}
	for m := r.Meta; len(m) > 0; {
		k, v, rest, err := abi.NextMeta(m)
		if err != nil {
			t.Fatalf("result meta: %v", err)
		}
		res.Meta[string(k)] = string(v)
		m = rest
	}
	return res
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

// chunkList encodes chunks as an ABI item list of canonical JSON.
func chunkList(chunks []canon.ChatChunk) []byte {
	var list []byte
	for i := range chunks {
		list = abi.AppendItem(list, chunks[i].AppendJSON(nil))
	}
	return list
}

// gwMeta is the meta the gateway passes to response and stream encode.
var gwMeta = []string{abi.MetaID, "chatcmpl-gw1", abi.MetaModel, "llama3.2:3b", abi.MetaCreated, "1764528000"}

func routeMeta(route string) []string {
	return append([]string{abi.MetaRoute, route, abi.MetaKind, "chat"}, gwMeta...)
}

// runStream sends chunks split into calls at the given cut points (indexes
// into chunks, ascending), carrying the state blob as the host does; the
// last call carries FlagEnd. With endAlone the trailer comes in a separate
// call with no chunks.
func runStream(t testing.TB, p *sdk.Plugin, meta []string, chunks []canon.ChatChunk, cuts []int, endAlone bool) []byte {
	t.Helper()
	var state, out []byte
	bounds := append(append([]int{0}, cuts...), len(chunks))
	send := func(flags uint32, part []canon.ChatChunk) {
		r := call(t, p, abi.OpStreamEncode, flags, state, chunkList(part), meta...)
		if r.Status != abi.StatusOK {
			t.Fatalf("stream encode: %s: %s", r.Status, r.Error)
		}
		if r.Flags&abi.ResultStateKeep == 0 {
			state = r.State
		}
		out = append(out, r.Payload...)
	}
	for i := 0; i+1 < len(bounds); i++ {
		var flags uint32
		if i == 0 {
			flags |= abi.FlagFirst
		}
		if i+2 == len(bounds) && !endAlone {
			flags |= abi.FlagEnd
		}
		send(flags, chunks[bounds[i]:bounds[i+1]])
	}
	if endAlone {
		send(abi.FlagEnd, nil)
	}
	return out
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

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s mismatch\n got: %s\nwant: %s", name, got, want)
	}
}

// goldenJSON compares JSON documents semantically (key order and spacing
// ignored); under -update it writes got indented.
func goldenJSON(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	var g any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: output is not JSON: %v\n%s", name, err, got)
	}
	if *update {
		b, _ := json.MarshalIndent(g, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	var w any
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("%s mismatch\n got: %s\nwant: %s", name, gb, wb)
	}
}

// testFiles lists testdata/dir/*suffix, sorted, without the suffix.
func testFiles(t testing.TB, dir, suffix string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join("testdata", dir, "*"+suffix))
	if err != nil || len(m) == 0 {
		t.Fatalf("no testdata/%s/*%s: %v", dir, suffix, err)
	}
	for i := range m {
		m[i] = strings.TrimSuffix(filepath.Base(m[i]), suffix)
	}
	return m
}
