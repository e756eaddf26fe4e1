package openai

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

// result is a call's copied result (sdktest.Result, meta as a map).
type result struct {
	Status  abi.Status
	Flags   uint32
	State   []byte
	Meta    map[string]string
	Payload []byte
	Error   string
}

func newPlugin() *sdk.Plugin { return sdk.NewTranslator(Manifest(), New()) }

// call runs one op through the SDK dispatcher exactly as the wasm exports
// do (sdktest.Harness.Call). meta is key, value, key, value, ...; only
// that meta is sent (no defaults), as these tests pin what is needed.
func call(t testing.TB, p *sdk.Plugin, op abi.Op, flags uint32, state []byte, payload []byte, meta ...string) result {
	t.Helper()
	r := sdktest.New(t, p).Call(op, sdktest.NoDefaults(), sdktest.Flags(flags), sdktest.State(state),
		sdktest.Payload(payload), sdktest.Meta(meta...))
	return result{Status: r.Status, Flags: r.Flags, State: r.State, Meta: r.Meta, Payload: r.Payload, Error: r.Error}
}

// chunkList encodes chunks as an ABI item list (sdktest.ChunkList).
func chunkList(chunks []canon.ChatChunk) []byte { return sdktest.ChunkList(chunks) }

// streamer drives one stream through the plugin, carrying the state blob
// between calls as the host does.
type streamer struct {
	t     testing.TB
	p     *sdk.Plugin
	meta  []string
	state []byte
	out   []byte
}

func (s *streamer) send(flags uint32, chunks []canon.ChatChunk) result {
	s.t.Helper()
	r := call(s.t, s.p, abi.OpStreamEncode, flags, s.state, chunkList(chunks), s.meta...)
	if r.Status != abi.StatusOK {
		s.t.Fatalf("stream encode: %s: %s", r.Status, r.Error)
	}
	if r.Flags&abi.ResultStateKeep == 0 {
		s.state = r.State
	}
	s.out = append(s.out, r.Payload...)
	return r
}

// runStream is sdktest.StreamCuts: chunks cut into calls at cuts.
func runStream(t testing.TB, p *sdk.Plugin, meta []string, chunks []canon.ChatChunk, cuts []int, endAlone bool) []byte {
	t.Helper()
	return sdktest.StreamCuts(t, p, meta, chunks, cuts, endAlone)
}

// sseEvents splits SSE output into data payloads, checking the framing.
func sseEvents(t testing.TB, b []byte) []string {
	t.Helper()
	var evs []string
	for len(b) > 0 {
		ev, rest, ok := bytes.Cut(b, []byte("\n\n"))
		if !ok {
			t.Fatalf("unterminated event %q", b)
		}
		d, found := bytes.CutPrefix(ev, []byte("data: "))
		if !found || bytes.ContainsAny(d, "\n") {
			t.Fatalf("bad event %q", ev)
		}
		evs = append(evs, string(d))
		b = rest
	}
	return evs
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
