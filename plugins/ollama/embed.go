package ollama

import (
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// Embeddings go to Ollama's POST /api/embed
// (https://github.com/ollama/ollama/blob/main/docs/api.md#generate-embeddings):
// {"model","input":[...],"truncate","dimensions"} answered by
// {"model","embeddings":[[...]],"total_duration","load_duration",
// "prompt_eval_count"}. Ollama has no base64 encoding; the numbers are
// read as they come. truncate is sent true, Ollama's default, so a long
// input is cut to the model's context as vLLM and OpenAI clients expect
// rather than failing.

const pathEmbed = "/api/embed"

var _ sdk.EmbeddingAdapter = (*Adapter)(nil)

// EncodeEmbeddingRequest writes the /api/embed body.
func (a *Adapter) EncodeEmbeddingRequest(c *sdk.Call, req *canon.EmbeddingRequest, out *sdk.Output) error {
	b := append(out.Body, `{"model":`...)
	b = jsonw.String(b, req.Model)
	b = append(b, `,"input":[`...)
	for i, s := range req.Input {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonw.String(b, s)
	}
	b = append(b, `],"truncate":true`...)
	if req.Dimensions > 0 {
		b = append(b, `,"dimensions":`...)
		b = jsonw.Int(b, int64(req.Dimensions))
	}
	out.Body = append(b, '}')
	out.SetMeta(abi.MetaMethod, "POST")
	out.SetMeta(abi.MetaPath, pathEmbed)
	out.SetMeta(abi.MetaContentType, "application/json")
	return nil
}

// DecodeEmbeddingResponse reads the /api/embed answer.
func (a *Adapter) DecodeEmbeddingResponse(c *sdk.Call, body []byte, resp *canon.EmbeddingResponse) error {
	v, err := a.p.ParseBytes(body)
	if err != nil {
		return sdk.BadInput("embed response is not valid JSON: " + err.Error())
	}
	if v.Type() != fastjson.TypeObject {
		return sdk.BadInput("embed response is not a JSON object")
	}
	if m := v.Get("model"); m != nil && m.Type() == fastjson.TypeString {
		resp.Model = string(m.GetStringBytes())
	}
	embs := v.Get("embeddings")
	if embs == nil || embs.Type() != fastjson.TypeArray {
		return sdk.BadInput("embed response has no embeddings array")
	}
	vecs, _ := embs.Array()
	total := 0
	for i, x := range vecs {
		arr, err := x.Array()
		if err != nil {
			return sdk.BadInput("embed response: embeddings[" + strconv.Itoa(i) + "] is not an array")
		}
		total += len(arr)
	}
	// One allocation for all the numbers, one for the vectors.
	all := make([]float32, total)
	resp.Vectors = make([][]float32, len(vecs))
	for i, x := range vecs {
		arr, _ := x.Array()
		vec := all[:len(arr):len(arr)]
		all = all[len(arr):]
		for j, n := range arr {
			f, err := n.Float64()
			if err != nil {
				return sdk.BadInput("embed response: embeddings[" + strconv.Itoa(i) + "][" + strconv.Itoa(j) + "] is not a number")
			}
			vec[j] = float32(f)
		}
		resp.Vectors[i] = vec
	}
	if n := v.Get("prompt_eval_count"); n != nil {
		if p, err := n.Int(); err == nil && p >= 0 {
			resp.Usage = &canon.Usage{PromptTokens: p, TotalTokens: p}
		}
	}
	return nil
}
