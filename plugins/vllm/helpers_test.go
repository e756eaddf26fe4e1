package vllm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

// The call, framing and stream machinery is sdk/sdktest's; these wrappers
// keep the shapes this package's tests were written against.

func newPlugin() *sdk.Plugin { return sdk.NewAdapter(Manifest(), New()) }

// result is an sdktest.Result with the raw meta list, which some tests
// walk pair by pair.
type result struct {
	Status  abi.Status
	Flags   uint32
	State   []byte
	Meta    []byte
	Payload []byte
	Error   string
}

// callOp runs op on p with exactly the meta given (no defaults filled in:
// these tests pin what an adapter does without them).
func callOp(t testing.TB, p *sdk.Plugin, op abi.Op, flags uint32, state []byte, meta map[string]string, payload []byte) result {
	t.Helper()
	opts := []sdktest.Option{sdktest.NoDefaults(), sdktest.Flags(flags), sdktest.State(state), sdktest.Payload(payload)}
	for k, v := range meta {
		opts = append(opts, sdktest.Meta(k, v))
	}
	r := sdktest.New(t, p).Call(op, opts...)
	return result{Status: r.Status, Flags: r.Flags, State: r.State, Meta: r.RawMeta, Payload: r.Payload, Error: r.Error}
}

func (r result) meta(key string) string {
	v, _ := abi.MetaGet(r.Meta, key)
	return string(v)
}

// items splits a list payload into its items.
func items(t testing.TB, list []byte) [][]byte {
	t.Helper()
	out, err := sdktest.SplitItems(list)
	if err != nil {
		t.Fatalf("item list: %v", err)
	}
	return out
}

// eventList lays events out as a list payload.
func eventList(events [][]byte) []byte {
	var b []byte
	for _, e := range events {
		b = abi.AppendItem(b, e)
	}
	return b
}

// readSSE frames an SSE file under testdata/streams as the host does.
func readSSE(t testing.TB, name string) [][]byte {
	t.Helper()
	return frameSSE(readTestdata(t, "streams", name))
}

func frameSSE(b []byte) [][]byte { return sdktest.SSEEvents(b) }

// streamABI decodes events through the ABI in the given batches as the
// gateway's relay does (sdktest.Stream). It returns the canonical chunk
// JSON items and whether the plugin reported the end of the stream.
func streamABI(t testing.TB, p *sdk.Plugin, batches [][][]byte) (out [][]byte, done bool, errMsg string) {
	t.Helper()
	s := sdktest.New(t, p).Stream(abi.OpStreamDecode, batches, sdktest.NoDefaults())
	if !s.OK() {
		errMsg = s.Status.String() + ": " + s.Error
	}
	return items(t, s.Out), s.Done, errMsg
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
