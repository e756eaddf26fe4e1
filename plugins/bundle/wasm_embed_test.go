//go:build !race

package bundle

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/f32json"
)

// embedVectors are vectors of every float32 form the text codec meets:
// both zeros, subnormals, the extremes, both sides of encoding/json's
// exponent switch, non-finite values (written 0), random bit patterns
// and typical embedding values.
func embedVectors(seed uint64, rows, dim int) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	special := []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -1.1754942e-38, 1.17549435e-38,
		math.MaxFloat32, -math.MaxFloat32, 1e-6, 9.999999e-7, 1e-7, 1e21, 9.999999e20, 123456789, float32(math.NaN()), float32(math.Inf(1))}
	out := make([][]float32, rows)
	for i := range out {
		v := make([]float32, dim)
		for j := range v {
			switch k := r.IntN(4); {
			case i == 0 && j < len(special):
				v[j] = special[j]
			case k == 0:
				v[j] = math.Float32frombits(r.Uint32())
			default:
				v[j] = float32(r.NormFloat64() * 0.05)
			}
		}
		out[i] = v
	}
	return out
}

// TestWasm_EmbeddingFloatsMatchNative: the embedding ops that write or
// read decimal vectors give the same bytes in the .wasm, where the host's
// f32_format/f32_parse do the work, as natively, where the SDK runs the
// codec itself: the OpenAI float encoding, Ollama's client API encoding,
// the Ollama adapter's decode and vLLM's number-array decode.
func TestWasm_EmbeddingFloatsMatchNative(t *testing.T) {
	w := wasmtest.Load(t, "bundle", nil)
	w.Init(t)
	native := New()
	check := func(name string, op abi.Op, in []byte) res {
		t.Helper()
		want := parse(t, native.Call(op, in))
		got := parse(t, w.Call(t, op, in))
		if got.Status != want.Status || got.Error != want.Error || !bytes.Equal(got.Payload, want.Payload) ||
			metaString(got.Meta) != metaString(want.Meta) {
			t.Errorf("%s: wasm %s %q %.200s\nnative %s %q %.200s", name, got.Status, got.Error, got.Payload, want.Status, want.Error, want.Payload)
		}
		return want
	}
	for seed, shape := range [][2]int{{1, 1}, {1, 7}, {8, 384}, {1, 3072}, {3, 0}} {
		vecs := embedVectors(uint64(seed), shape[0], shape[1])
		name := strconv.Itoa(shape[0]) + "x" + strconv.Itoa(shape[1])
		resp := (&canon.EmbeddingResponse{Model: "m", Vectors: vecs, Usage: &canon.Usage{PromptTokens: 3}}).AppendJSON(nil)
		meta := metaList(abi.MetaRoute, "embeddings", abi.MetaKind, "embedding", abi.MetaModel, "m", abi.MetaEncodingFormat, "float")
		r := check(name+" openai float", abi.OpEmbedResponseEncode, input(OpenAI, 0, 0, nil, meta, resp))
		if !r.ok() || !bytes.Contains(r.Payload, []byte(`"embedding":[`)) {
			t.Fatalf("%s openai: %s %s", name, r.Status, r.Error)
		}
		for _, route := range []string{"embed", "embeddings"} {
			check(name+" ollama api "+route, abi.OpEmbedResponseEncode, input(OllamaAPI, 0, 0, nil, metaList(abi.MetaRoute, route, abi.MetaKind, "embedding"), resp))
		}
		// Backend answers in decimal: Ollama's (encoding/json's form) and
		// a vLLM that ignored the base64 request ('g' form).
		ollama := []byte(`{"model":"m","embeddings":[`)
		vllm := []byte(`{"model":"m","data":[`)
		for i, v := range vecs {
			if i > 0 {
				ollama = append(ollama, ',')
				vllm = append(vllm, ',')
			}
			ollama = f32json.Append(ollama, v, sdk.FloatJS)
			vllm = f32json.Append(append(vllm, `{"index":`+strconv.Itoa(i)+`,"embedding":`...), v, sdk.FloatG)
			vllm = append(vllm, '}')
		}
		ollama = append(ollama, `],"prompt_eval_count":3}`...)
		vllm = append(vllm, `],"usage":{"prompt_tokens":3}}`...)
		if r := check(name+" ollama decode", abi.OpEmbedResponseDecode, input(0, Ollama, 0, nil, nil, ollama)); !r.ok() {
			t.Fatalf("%s ollama decode: %s %s", name, r.Status, r.Error)
		}
		if r := check(name+" vllm decode", abi.OpEmbedResponseDecode, input(0, VLLM, 0, nil, nil, vllm)); !r.ok() {
			t.Fatalf("%s vllm decode: %s %s", name, r.Status, r.Error)
		}
	}
	for _, body := range []string{
		`{"embeddings":[[1,NaN]]}`, `{"embeddings":[[1e39]]}`, `{"embeddings":[[1,"x"]]}`, `{"embeddings":[[1],2]}`,
		`{"embeddings":[[1,2]`, `{"model":"embeddings","embeddings":[[0.5]]}`, `{"embe\u0064dings":[[1]]}`, "{\"embeddings\" : [ [ 1 , 2 ] ,\n[3] ] }",
	} {
		check("ollama "+body, abi.OpEmbedResponseDecode, input(0, Ollama, 0, nil, nil, []byte(body)))
	}
	for _, body := range []string{`{"data":[{"embedding":[1,NaN]}]}`, `{"data":[{"embedding":[1,1e39]}]}`, `{"data":[{"embedding":[]}]}`} {
		check("vllm "+body, abi.OpEmbedResponseDecode, input(0, VLLM, 0, nil, nil, []byte(body)))
	}
}
