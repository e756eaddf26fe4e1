package ollama

import (
	"flag"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

var embedUpdate = flag.Bool("embed-update", false, "rewrite the embedding golden outputs in testdata/embed")

func newEmbedPlugin() *sdk.Plugin { return sdk.NewAdapter(Manifest(), New()) }

func TestEmbedGolden(t *testing.T) {
	sdktest.AdapterEmbedGolden(t, newEmbedPlugin(), filepath.Join("testdata", "embed"), "ollama", embedPath, *embedUpdate)
}

func FuzzDecodeEmbeddingResponse(f *testing.F) {
	sdktest.FuzzAdapterEmbedResponse(f, newEmbedPlugin(), filepath.Join("testdata", "embed"), "ollama", embedFuzzSeeds...)
}

const embedPath = pathEmbed

var embedFuzzSeeds = []string{
	`{"embeddings":[[1,null],[]],"prompt_eval_count":"x"}`,
	`{"embeddings":[1]}`,
	`{"embeddings":[],"prompt_eval_count":0}`,
}

func TestEmbedResponseErrors(t *testing.T) {
	p := newEmbedPlugin()
	for _, tc := range []struct{ body, msg string }{
		{`{"model":"m"}`, "no embeddings array"},
		{`[]`, "not a JSON object"},
		{`{"embeddings":[[1],2]}`, "embeddings[1] is not an array"},
		{`{"embeddings":[[1,"x"]]}`, "embeddings[0][1] is not a number"},
		{`{"embeddings":`, "not valid JSON"},
	} {
		st, _, _, msg := sdktest.EmbedCall(t, p, abi.OpEmbedResponseDecode, []byte(tc.body), nil)
		if st != abi.StatusBadInput || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %s %q, want %q", tc.body, st, msg, tc.msg)
		}
	}
}

// The fast path (vectors read straight from the body) and the general one
// read every valid answer alike, whitespace and member order included.
func TestEmbedResponseFastMatchesSlow(t *testing.T) {
	a := New()
	for _, body := range []string{
		`{"model":"m","embeddings":[[0.1,-2e-7,3],[4.5]],"prompt_eval_count":3}`,
		"{ \"embeddings\" : [ [ 1 , 2 ] ,\n\t[ ] , [3] ] , \"model\" : \"m\" }",
		`{"prompt_eval_count":2,"model":"embeddings","embeddings":[]}`,
		`{"total_duration":1,"load_duration":{"x":[1,"]"]},"embeddings":[[1e-45,-0,3.4028235e38]]}`,
	} {
		var fast, slow canon.EmbeddingResponse
		if !a.decodeEmbedFast([]byte(body), &fast) {
			t.Errorf("%s: fast path refused it", body)
			continue
		}
		if err := a.decodeEmbedSlow([]byte(body), &slow); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: fast %+v, slow %+v", body, fast, slow)
		}
	}
	// What the fast path cannot read goes to the general path: bad input
	// with its message, never a different answer.
	for _, body := range []string{`{"embeddings":[[1,NaN]]}`, `{"embeddings":[[1]] x`, `{"embe\u0064dings":[[1]]}`, `{"embeddings":[[1,[2]]]}`} {
		var fast canon.EmbeddingResponse
		if a.decodeEmbedFast([]byte(body), &fast) {
			t.Errorf("%s: fast path accepted it: %+v", body, fast)
		}
	}
}
