package sdktest

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// The helpers the first-party translators' tests share: a translator's
// test package keeps its goldens in testdata/ and drives streams by
// cutting a canonical chunk sequence into calls.

// ChunkList encodes chunks as an ABI item list of canonical JSON (a
// stream_encode payload).
func ChunkList(chunks []canon.ChatChunk) []byte {
	var list []byte
	for _, it := range Chunks(chunks...) {
		list = abi.AppendItem(list, it)
	}
	return list
}

// StreamCuts runs stream_encode on chunks split into calls at the cut
// points (indexes into chunks, ascending) through Harness.Stream, with only
// the meta given; the last call carries FlagEnd, or, with endAlone, the
// trailer comes in a call of its own with no chunks. A status other than
// ok fails the test; the output of every call is returned.
func StreamCuts(tb testing.TB, p *sdk.Plugin, meta []string, chunks []canon.ChatChunk, cuts []int, endAlone bool) []byte {
	tb.Helper()
	var batches [][][]byte
	bounds := append(append([]int{0}, cuts...), len(chunks))
	for i := 0; i+1 < len(bounds); i++ {
		batches = append(batches, Chunks(chunks[bounds[i]:bounds[i+1]]...))
	}
	if endAlone {
		batches = append(batches, nil)
	}
	s := New(tb, p).Stream(abi.OpStreamEncode, batches, NoDefaults(), Meta(meta...))
	if !s.OK() {
		tb.Fatalf("stream encode: %s: %s", s.Status, s.Error)
	}
	return s.Out
}

// GoldenJSON is Golden for a JSON document compared as a value: got is
// put in encoding/json's order (object keys sorted), the order the golden
// files are written in, so member order and spacing do not count.
func GoldenJSON(tb testing.TB, path string, got []byte) {
	tb.Helper()
	var g any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatalf("%s: output is not JSON: %v\n%s", path, err, got)
	}
	b, err := json.Marshal(g)
	if err != nil {
		tb.Fatal(err)
	}
	Golden(tb, path, b)
}

// TestdataFiles lists testdata/dir/*suffix, sorted, without the suffix; none
// fails the test.
func TestdataFiles(tb testing.TB, dir, suffix string) []string {
	tb.Helper()
	m, err := filepath.Glob(filepath.Join("testdata", dir, "*"+suffix))
	if err != nil || len(m) == 0 {
		tb.Fatalf("no testdata/%s/*%s: %v", dir, suffix, err)
	}
	for i := range m {
		m[i] = strings.TrimSuffix(filepath.Base(m[i]), suffix)
	}
	return m
}
