package ollama

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/f32json"
	"github.com/mindrouter/mindrouter/sdk/jsonw"

	"github.com/mindrouter/mindrouter/plugins/internal/rawjson"
)

// Embeddings go to Ollama's POST /api/embed
// (https://github.com/ollama/ollama/blob/main/docs/api.md#generate-embeddings):
// {"model","input":[...],"truncate","dimensions"} answered by
// {"model","embeddings":[[...]],"total_duration","load_duration",
// "prompt_eval_count"}. Ollama has no base64 encoding; the numbers are
// read as they come, each rounded once to the nearest float32 (not a
// JSON number, such as NaN, or one beyond float32's range: bad input). truncate is sent true, Ollama's default, so a long
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

// DecodeEmbeddingResponse reads the /api/embed answer. The vectors, most
// of its bytes, are read straight from the body: each number array goes
// whole to sdk.ParseFloat32s (the host's native parser when this runs as
// .wasm), and fastjson reads the rest of the body with the vectors cut
// out. A body that path cannot read takes the general one, which gives
// the error messages.
func (a *Adapter) DecodeEmbeddingResponse(c *sdk.Call, body []byte, resp *canon.EmbeddingResponse) error {
	if a.decodeEmbedFast(body, resp) {
		return nil
	}
	*resp = canon.EmbeddingResponse{}
	return a.decodeEmbedSlow(body, resp)
}

func (a *Adapter) decodeEmbedFast(body []byte, resp *canon.EmbeddingResponse) bool {
	start, ok := rawjson.FindMember(body, "embeddings")
	if !ok || start < 0 {
		return false
	}
	vecs, end, ok := readVectors(body, start)
	if !ok {
		return false
	}
	// The body without the vectors, for fastjson to validate and read the
	// small members.
	rest := make([]byte, 0, len(body)-(end-start)+2)
	rest = append(append(append(rest, body[:start]...), "[]"...), body[end:]...)
	v, err := a.p.ParseBytes(rest)
	if err != nil || v.Type() != fastjson.TypeObject {
		return false
	}
	resp.Vectors = vecs
	embedMeta(v, resp)
	return true
}

// readVectors reads body[i:], an array of number arrays, into vectors
// sharing one backing array; end is the offset past it. A number holds no
// ']', so each vector ends at the first one after its '[': anything else
// inside (a string, a nested array) fails the number parse.
func readVectors(body []byte, i int) (vecs [][]float32, end int, ok bool) {
	if i >= len(body) || body[i] != '[' {
		return nil, 0, false
	}
	var all []float32
	var ends []int
	i = skipWS(body, i+1)
	if i < len(body) && body[i] == ']' {
		return [][]float32{}, i + 1, true
	}
	for {
		if i >= len(body) || body[i] != '[' {
			return nil, 0, false
		}
		j := bytes.IndexByte(body[i:], ']')
		if j < 0 {
			return nil, 0, false
		}
		var err error
		if all, err = sdk.ParseFloat32s(all, body[i:i+j+1]); err != nil {
			return nil, 0, false
		}
		ends = append(ends, len(all))
		i = skipWS(body, i+j+1)
		if i >= len(body) {
			return nil, 0, false
		}
		if body[i] == ']' {
			break
		}
		if body[i] != ',' {
			return nil, 0, false
		}
		i = skipWS(body, i+1)
	}
	vecs = make([][]float32, len(ends))
	prev := 0
	for k, e := range ends {
		vecs[k] = all[prev:e:e]
		prev = e
	}
	return vecs, i + 1, true
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// decodeEmbedSlow reads the answer with fastjson throughout, naming what
// is wrong with it.
func (a *Adapter) decodeEmbedSlow(body []byte, resp *canon.EmbeddingResponse) error {
	v, err := a.p.ParseBytes(body)
	if err != nil {
		return sdk.BadInput("embed response is not valid JSON: " + err.Error())
	}
	if v.Type() != fastjson.TypeObject {
		return sdk.BadInput("embed response is not a JSON object")
	}
	embs := v.Get("embeddings")
	if embs == nil || embs.Type() != fastjson.TypeArray {
		return sdk.BadInput("embed response has no embeddings array")
	}
	vecs, _ := embs.Array()
	resp.Vectors = make([][]float32, len(vecs))
	var raw []byte
	for i, x := range vecs {
		if x.Type() != fastjson.TypeArray {
			return sdk.BadInput("embed response: embeddings[" + strconv.Itoa(i) + "] is not an array")
		}
		arr, _ := x.Array()
		raw = x.MarshalTo(raw[:0])
		vec, err := sdk.ParseFloat32s(make([]float32, 0, len(arr)), raw)
		if err != nil {
			var e *f32json.Error
			if errors.As(err, &e) && e.Code != f32json.CodeSyntax {
				msg := " is not a number"
				if e.Code == f32json.CodeRange {
					msg = " is beyond the float32 range"
				}
				return sdk.BadInput("embed response: embeddings[" + strconv.Itoa(i) + "][" + strconv.Itoa(e.Index) + "]" + msg)
			}
			return sdk.BadInput("embed response: embeddings[" + strconv.Itoa(i) + "]: " + err.Error())
		}
		resp.Vectors[i] = vec
	}
	embedMeta(v, resp)
	return nil
}

// embedMeta reads the model and the prompt token count.
func embedMeta(v *fastjson.Value, resp *canon.EmbeddingResponse) {
	if m := v.Get("model"); m != nil && m.Type() == fastjson.TypeString {
		resp.Model = string(m.GetStringBytes())
	}
	if n := v.Get("prompt_eval_count"); n != nil {
		if p, err := n.Int(); err == nil && p >= 0 {
			resp.Usage = &canon.Usage{PromptTokens: p, TotalTokens: p}
		}
	}
}
