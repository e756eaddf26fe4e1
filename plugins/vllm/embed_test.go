package vllm

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

var embedUpdate = flag.Bool("embed-update", false, "rewrite the embedding golden outputs in testdata/embeddings")

func newEmbedPlugin() *sdk.Plugin { return sdk.NewAdapter(Manifest(), New()) }

func TestEmbedGolden(t *testing.T) {
	sdktest.AdapterEmbedGolden(t, newEmbedPlugin(), filepath.Join("testdata", "embeddings"), "vllm", embedPath, *embedUpdate)
}

func FuzzDecodeEmbeddingResponse(f *testing.F) {
	sdktest.FuzzAdapterEmbedResponse(f, newEmbedPlugin(), filepath.Join("testdata", "embeddings"), "vllm", embedFuzzSeeds...)
}

const embedPath = pathEmbeddings

var embedFuzzSeeds = []string{
	`{"data":[{"index":0,"embedding":"AAAA"},{"index":0,"embedding":[1]}]}`,
	`{"data":[{"index":5,"embedding":[1,null]}],"usage":{"prompt_tokens":-1}}`,
	`{"data":[{"embedding":"AAA="}]}`,
}

func TestEmbedResponseErrors(t *testing.T) {
	p := newEmbedPlugin()
	for _, tc := range []struct{ body, msg string }{
		{`{"object":"list"}`, "no data array"},
		{`[]`, "not a JSON object"},
		{`{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}`, "data[1].index"},
		{`{"data":[{"index":2,"embedding":[1]}]}`, "data[0].index"},
		{`{"data":[{"index":0,"embedding":"AAA="}]}`, "not base64 of float32"},
		{`{"data":[{"index":0,"embedding":[1,"x"]}]}`, "element 1 is not a number"},
		{`{"data":[{"index":0}]}`, "data[0].embedding: missing"},
		{`not json`, "not valid JSON"},
	} {
		st, _, _, msg := sdktest.EmbedCall(t, p, abi.OpEmbedResponseDecode, []byte(tc.body), nil)
		if st != abi.StatusBadInput || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %s %q, want %q", tc.body, st, msg, tc.msg)
		}
	}
}
