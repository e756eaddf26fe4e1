package ollama

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

// result is a copied abi.Result.
type result struct {
	Status  abi.Status
	Flags   uint32
	State   []byte
	Meta    []byte
	Payload []byte
	Error   string
}

func (r result) meta(key string) string {
	v, _ := abi.MetaGet(r.Meta, key)
	return string(v)
}

func (r result) done() bool      { return r.Flags&abi.ResultStreamDone != 0 }
func (r result) keepState() bool { return r.Flags&abi.ResultStateKeep != 0 }

// harness drives one native plugin through the ABI, as the host drives the
// wasm build, and records its log lines.
type harness struct {
	p    *sdk.Plugin
	logs []string
}

func newHarness() *harness {
	h := &harness{p: sdk.NewAdapter(Manifest(), New())}
	h.p.SetLogger(func(level int, msg string) { h.logs = append(h.logs, msg) })
	return h
}

// call runs op through sdktest with exactly the meta given (key, value,
// key, value, ...): no defaults, as these tests pin what the adapter does
// without them.
func (h *harness) call(t testing.TB, op abi.Op, flags uint32, state, payload []byte, meta ...string) result {
	t.Helper()
	r := sdktest.New(t, h.p).Call(op, sdktest.NoDefaults(), sdktest.Flags(flags), sdktest.State(state),
		sdktest.Payload(payload), sdktest.Meta(meta...))
	return result{Status: r.Status, Flags: r.Flags, State: r.State, Meta: r.RawMeta, Payload: r.Payload, Error: r.Error}
}

// input lays out one call as the host does: header, state, meta, payload
// (raw buffers for the wasm parity test, which sdktest does not drive).
func input(flags uint32, state, payload []byte, meta ...string) []byte {
	var m []byte
	for i := 0; i+1 < len(meta); i += 2 {
		m = abi.AppendMeta(m, meta[i], meta[i+1])
	}
	in := make([]byte, abi.HeaderSize, abi.HeaderSize+len(state)+len(m)+len(payload))
	abi.PutHeader(in, abi.Header{Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(m)),
		PayloadLen: uint32(len(payload)), RequestID: 7})
	in = append(in, state...)
	in = append(in, m...)
	return append(in, payload...)
}

// parse copies a result area out of the plugin's buffer.
func parse(t testing.TB, b []byte) result {
	t.Helper()
	r, err := abi.ParseResult(b)
	if err != nil {
		t.Fatalf("malformed result: %v", err)
	}
	return result{Status: r.Status, Flags: r.Flags, State: clone(r.State), Meta: clone(r.Meta),
		Payload: clone(r.Payload), Error: string(r.Error)}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// items packs events or chunks as an ABI list payload.
func items(list [][]byte) []byte {
	var b []byte
	for _, it := range list {
		b = abi.AppendItem(b, it)
	}
	return b
}

// splitItems unpacks an ABI list payload.
func splitItems(t testing.TB, list []byte) [][]byte {
	t.Helper()
	out, err := sdktest.SplitItems(list)
	if err != nil {
		t.Fatalf("bad item list: %v", err)
	}
	return out
}

// lines splits NDJSON text into events the way the host's framer does.
func lines(s string) [][]byte { return sdktest.NDJSONLines([]byte(s)) }

// pretty indents JSON for golden files and readable diffs.
func pretty(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// golden compares got (JSON) with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	sdktest.Golden(t, filepath.Join("testdata", name), got)
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testFiles lists testdata/dir files with the suffix, without it
// (sdktest.TestdataFiles).
func testFiles(t testing.TB, dir, suffix string) []string {
	t.Helper()
	return sdktest.TestdataFiles(t, dir, suffix)
}

// chunksJSON renders a decoded chunk list as one JSON array.
func chunksJSON(t testing.TB, payloads ...[]byte) []byte {
	t.Helper()
	b := []byte{'['}
	n := 0
	for _, p := range payloads {
		for _, it := range splitItems(t, p) {
			var c canon.ChatChunk
			if err := c.DecodeJSON(it); err != nil {
				t.Fatalf("chunk %q does not decode: %v", it, err)
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, it...)
		}
	}
	return append(b, ']')
}
