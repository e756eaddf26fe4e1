package responses

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

// FuzzDecodeRequest requires every body to decode or be the client's
// error (bad_input), never a plugin error, with the same result twice.
// Seeds: the request bodies of the decode tests and testdata/requests.
func FuzzDecodeRequest(f *testing.F) {
	seeds := [][]byte{
		[]byte(`{"model":"m","input":"x"}`),
		[]byte(`{"model":"m","instructions":"s","input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]},{"type":"reasoning","summary":[{"type":"summary_text","text":"r"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}],"tools":[{"type":"function","name":"f","parameters":{}}],"tool_choice":{"type":"function","name":"f"},"text":{"format":{"type":"json_schema","name":"n","schema":{}}},"reasoning":{"effort":"low"},"max_output_tokens":5,"stream":true}`),
		[]byte(`{"model":"m","input":[{"type":"item_reference","id":"x"}],"previous_response_id":"r"}`),
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "requests", "*.json"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			seeds = append(seeds, b)
		}
	}
	newHarness(f).FuzzWith(f, abi.OpRequestDecode, []sdktest.Option{sdktest.Meta(routeMeta...)}, seeds...)
}

// FuzzEncodeStream feeds arbitrary chunk lists and state blobs to the
// stream op: ok or bad_input, never a plugin error.
func FuzzEncodeStream(f *testing.F) {
	var seeds [][]byte
	for _, tc := range streamCases {
		seeds = append(seeds, canonList(tc.chunks))
	}
	newHarness(f).FuzzWith(f, abi.OpStreamEncode, []sdktest.Option{sdktest.Meta(gwMeta...)}, seeds...)
}

// canonList joins chunks' canonical JSON with newlines, the fuzz seed
// form of a stream op's item list.
func canonList(chunks []canon.ChatChunk) []byte {
	return bytes.Join(sdktest.Chunks(chunks...), []byte("\n"))
}
