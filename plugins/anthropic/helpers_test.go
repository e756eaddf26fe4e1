package anthropic

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

// call runs one op through the SDK dispatcher exactly as the wasm exports do.
// meta is key, value, key, value, ...
func call(t testing.TB, p *sdk.Plugin, op abi.Op, flags uint32, state []byte, payload []byte, meta ...string) result {
	t.Helper()
	var m []byte
	for i := 0; i+1 < len(meta); i += 2 {
		m = abi.AppendMeta(m, meta[i], meta[i+1])
	}
	in := make([]byte, abi.HeaderSize, abi.HeaderSize+len(state)+len(m)+len(payload))
	abi.PutHeader(in, abi.Header{Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(m)), PayloadLen: uint32(len(payload)), RequestID: 7})
	in = append(append(append(in, state...), m...), payload...)
	r, err := abi.ParseResult(p.Call(op, in))
	if err != nil {
		t.Fatalf("%s: parse result: %v", op, err)
	}
	res := result{
		Status:  r.Status,
		Flags:   r.Flags,
		State:   bytes.Clone(r.State),
		Payload: bytes.Clone(r.Payload),
		Error:   string(r.Error),
		Meta:    map[string]string{},
	}
	for mm := r.Meta; len(mm) > 0; {
		k, v, rest, err := abi.NextMeta(mm)
		if err != nil {
			t.Fatalf("%s: result meta: %v", op, err)
		}
		res.Meta[string(k)] = string(v)
		mm = rest
	}
	return res
}

// chunkList encodes chunks as an ABI item list of canonical JSON.
func chunkList(chunks []canon.ChatChunk) []byte {
	var list []byte
	for i := range chunks {
		list = abi.AppendItem(list, chunks[i].AppendJSON(nil))
	}
	return list
}

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

// runStream sends chunks split into calls at the given cut points (indexes
// into chunks, ascending); the last call carries FlagEnd. With endAlone the
// trailer comes in a separate call with no chunks.
func runStream(t testing.TB, p *sdk.Plugin, meta []string, chunks []canon.ChatChunk, cuts []int, endAlone bool) []byte {
	t.Helper()
	s := &streamer{t: t, p: p, meta: meta}
	bounds := append(append([]int{0}, cuts...), len(chunks))
	for i := 0; i+1 < len(bounds); i++ {
		var flags uint32
		if i == 0 {
			flags |= abi.FlagFirst
		}
		if i+2 == len(bounds) && !endAlone {
			flags |= abi.FlagEnd
		}
		s.send(flags, chunks[bounds[i]:bounds[i+1]])
	}
	if endAlone {
		s.send(abi.FlagEnd, nil)
	}
	return s.out
}

// sseEvent is one server-sent event.
type sseEvent struct{ name, data string }

// sseEvents splits SSE output into events, checking the framing: every
// event is "event: <name>\ndata: <one line>\n\n" and its data's "type"
// is its name, as in Anthropic's streams.
func sseEvents(t testing.TB, b []byte) []sseEvent {
	t.Helper()
	var evs []sseEvent
	for len(b) > 0 {
		ev, rest, ok := bytes.Cut(b, []byte("\n\n"))
		if !ok {
			t.Fatalf("unterminated event %q", b)
		}
		line, d, found := bytes.Cut(ev, []byte("\ndata: "))
		name, named := bytes.CutPrefix(line, []byte("event: "))
		if !found || !named || bytes.ContainsAny(d, "\n") {
			t.Fatalf("bad event %q", ev)
		}
		var typ struct{ Type string }
		if err := json.Unmarshal(d, &typ); err != nil || typ.Type != string(name) {
			t.Fatalf("event %s: data type %q: %v", name, typ.Type, err)
		}
		evs = append(evs, sseEvent{string(name), string(d)})
		b = rest
	}
	return evs
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

// sdkStateWriter wraps the SDK's state writer for tests.
type sdkStateWriter struct{ w sdk.StateWriter }
