//go:build !race

package bundle

import (
	"encoding/base64"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// BenchmarkWasmEmbed measures, inside wazero, the embedding ops whose cost
// is decimal float text: the OpenAI translator writing vectors as numbers,
// Ollama's client API writing them, and the Ollama adapter reading its
// backend's numbers; the vLLM adapter's base64 decode is the reference
// without any float text. Shapes: 8×384 (BenchmarkEmbeddings' request)
// and 1×3072.
func BenchmarkWasmEmbed(b *testing.B) {
	w := wasmtest.Load(b, "bundle", nil)
	w.Init(b)
	for _, shape := range [][2]int{{8, 384}, {1, 3072}} {
		r := rand.New(rand.NewPCG(1, 2))
		vecs := make([][]float32, shape[0])
		for i := range vecs {
			vecs[i] = make([]float32, shape[1])
			for j := range vecs[i] {
				vecs[i][j] = float32(r.NormFloat64() * 0.05)
			}
		}
		resp := (&canon.EmbeddingResponse{Model: "m", Vectors: vecs, Usage: &canon.Usage{PromptTokens: 8}}).AppendJSON(nil)
		ollama := []byte(`{"model":"m","embeddings":[`)
		for i, v := range vecs {
			if i > 0 {
				ollama = append(ollama, ',')
			}
			ollama = append(ollama, '[')
			for j, f := range v {
				if j > 0 {
					ollama = append(ollama, ',')
				}
				ollama = strconv.AppendFloat(ollama, float64(f), 'g', -1, 32)
			}
			ollama = append(ollama, ']')
		}
		ollama = append(ollama, `],"total_duration":14000000,"load_duration":1000000,"prompt_eval_count":8}`...)
		vllm := []byte(`{"model":"m","data":[`)
		for i, v := range vecs {
			if i > 0 {
				vllm = append(vllm, ',')
			}
			raw := make([]byte, 4*len(v))
			for j, f := range v {
				u := math.Float32bits(f)
				raw[4*j], raw[4*j+1], raw[4*j+2], raw[4*j+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
			}
			vllm = append(vllm, `{"object":"embedding","index":`+strconv.Itoa(i)+`,"embedding":"`...)
			vllm = base64.StdEncoding.AppendEncode(vllm, raw)
			vllm = append(vllm, `"}`...)
		}
		vllm = append(vllm, `],"usage":{"prompt_tokens":8,"total_tokens":8}}`...)
		name := strconv.Itoa(shape[0]) + "x" + strconv.Itoa(shape[1])
		floatMeta := metaList(abi.MetaRoute, "embeddings", abi.MetaKind, "embedding", abi.MetaModel, "m", abi.MetaEncodingFormat, "float")
		for _, tc := range []struct {
			name string
			op   abi.Op
			in   []byte
		}{
			{"openai_float_encode", abi.OpEmbedResponseEncode, input(OpenAI, 0, 0, nil, floatMeta, resp)},
			{"ollamaapi_encode", abi.OpEmbedResponseEncode, input(OllamaAPI, 0, 0, nil, metaList(abi.MetaRoute, "embed", abi.MetaKind, "embedding"), resp)},
			{"ollama_decode", abi.OpEmbedResponseDecode, input(0, Ollama, 0, nil, nil, ollama)},
			{"vllm_base64_decode", abi.OpEmbedResponseDecode, input(0, VLLM, 0, nil, nil, vllm)},
		} {
			b.Run(name+"/"+tc.name, func(b *testing.B) {
				for b.Loop() {
					if r := parse(b, w.Call(b, tc.op, tc.in)); r.Status != abi.StatusOK {
						b.Fatal(r.Status, r.Error)
					}
				}
			})
		}
	}
}
