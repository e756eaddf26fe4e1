package vllm

import (
	"bytes"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

func newPlugin() *sdk.Plugin { return sdk.NewAdapter(Manifest(), New()) }

// result is an abi.Result whose slices are copies (a plugin's result area is
// valid only until its next call).
type result struct {
	Status  abi.Status
	Flags   uint32
	State   []byte
	Meta    []byte
	Payload []byte
	Error   string
}

// callOp lays out a call buffer as the host does and runs op on p.
func callOp(t testing.TB, p *sdk.Plugin, op abi.Op, flags uint32, state []byte, meta map[string]string, payload []byte) result {
	t.Helper()
	var m []byte
	for k, v := range meta {
		m = abi.AppendMeta(m, k, v)
	}
	in := make([]byte, abi.HeaderSize, abi.HeaderSize+len(state)+len(m)+len(payload))
	abi.PutHeader(in, abi.Header{
		Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(m)),
		PayloadLen: uint32(len(payload)), RequestID: 42,
	})
	in = append(in, state...)
	in = append(in, m...)
	in = append(in, payload...)
	r, err := abi.ParseResult(p.Call(op, in))
	if err != nil {
		t.Fatalf("%s: parse result: %v", op, err)
	}
	return result{
		Status: r.Status, Flags: r.Flags,
		State:   bytes.Clone(r.State),
		Meta:    bytes.Clone(r.Meta),
		Payload: bytes.Clone(r.Payload),
		Error:   string(r.Error),
	}
}

func (r result) meta(key string) string {
	v, _ := abi.MetaGet(r.Meta, key)
	return string(v)
}

// items splits a list payload into its items.
func items(t testing.TB, list []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for {
		item, rest, ok, err := abi.NextItem(list)
		if err != nil {
			t.Fatalf("item list: %v", err)
		}
		if !ok {
			return out
		}
		out = append(out, item)
		list = rest
	}
}

func eventList(events [][]byte) []byte {
	var b []byte
	for _, e := range events {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	return b
}

// readSSE frames an SSE file as the host does: one payload per event, its
// data lines joined by "\n", comment lines dropped.
func readSSE(t testing.TB, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "streams", name))
	if err != nil {
		t.Fatal(err)
	}
	return frameSSE(b)
}

func frameSSE(b []byte) [][]byte {
	var events [][]byte
	var cur []byte
	have := false
	flush := func() {
		if have {
			events = append(events, cur)
		}
		cur, have = nil, false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) == 0:
			flush()
		case line[0] == ':':
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[5:], []byte(" "))
			if have {
				cur = append(cur, '\n')
			}
			cur = append(cur, d...)
			have = true
		}
	}
	flush()
	return events
}

// streamABI decodes events through the ABI in the given batches, carrying
// the state blob as the host does. It returns the canonical chunk JSON items
// and whether the plugin reported the end of the stream.
func streamABI(t testing.TB, p *sdk.Plugin, batches [][][]byte) (out [][]byte, done bool, errMsg string) {
	t.Helper()
	var state []byte
	for i, batch := range batches {
		if done {
			break // the host stops calling once the backend ended the stream
		}
		var flags uint32
		if i == 0 {
			flags |= abi.FlagFirst
		}
		if i == len(batches)-1 {
			flags |= abi.FlagEnd
		}
		r := callOp(t, p, abi.OpStreamDecode, flags, state, nil, eventList(batch))
		if r.Status != abi.StatusOK {
			return out, done, r.Status.String() + ": " + r.Error
		}
		if r.Flags&abi.ResultStateKeep == 0 {
			state = r.State
		}
		if r.Flags&abi.ResultStreamDone != 0 {
			done = true
		}
		out = append(out, items(t, r.Payload)...)
	}
	return out, done, ""
}

func decodeChunks(t testing.TB, list [][]byte) []canon.ChatChunk {
	t.Helper()
	out := make([]canon.ChatChunk, len(list))
	for i, b := range list {
		if err := out[i].DecodeJSON(b); err != nil {
			t.Fatalf("chunk %d: %v\n%s", i, err, b)
		}
	}
	return out
}

func readTestdata(t testing.TB, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }
