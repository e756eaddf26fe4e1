package vllm

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// Embeddings go to vLLM's OpenAI-compatible POST /v1/embeddings
// (https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html#embeddings-api,
// request and response as OpenAI's,
// https://platform.openai.com/docs/api-reference/embeddings). The adapter
// asks for base64 (the vector's float32 bytes, little-endian on every
// platform vLLM runs on): decoding it is exact and much cheaper than
// parsing thousands of decimal numbers, which matters in WebAssembly. A
// server that answers with number arrays anyway is read as well.

const pathEmbeddings = "/v1/embeddings"

var _ sdk.EmbeddingAdapter = (*Adapter)(nil)

// EncodeEmbeddingRequest writes the /v1/embeddings body.
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
	b = append(b, `],"encoding_format":"base64"`...)
	if req.Dimensions > 0 {
		b = append(b, `,"dimensions":`...)
		b = jsonw.Int(b, int64(req.Dimensions))
	}
	if req.User != "" {
		b = append(b, `,"user":`...)
		b = jsonw.String(b, req.User)
	}
	out.Body = append(b, '}')
	out.SetMeta(abi.MetaMethod, "POST")
	out.SetMeta(abi.MetaPath, pathEmbeddings)
	out.SetMeta(abi.MetaContentType, "application/json")
	return nil
}

// DecodeEmbeddingResponse reads {"model","data":[{"index","embedding"}],
// "usage"}: each vector lands at its index, base64 or numbers.
func (a *Adapter) DecodeEmbeddingResponse(c *sdk.Call, body []byte, resp *canon.EmbeddingResponse) error {
	v, err := a.p.ParseBytes(body)
	if err != nil {
		return sdk.BadInput("embedding response is not valid JSON: " + err.Error())
	}
	if v.Type() != fastjson.TypeObject {
		return sdk.BadInput("embedding response is not a JSON object")
	}
	if m := v.Get("model"); m != nil && m.Type() == fastjson.TypeString {
		resp.Model = string(m.GetStringBytes())
	}
	data := v.Get("data")
	if data == nil || data.Type() != fastjson.TypeArray {
		return sdk.BadInput("embedding response has no data array")
	}
	items, _ := data.Array()
	resp.Vectors = make([][]float32, len(items))
	seen := make([]bool, len(items))
	for i, it := range items {
		idx := i
		if x := it.Get("index"); x != nil {
			n, err := x.Int()
			if err != nil || n < 0 || n >= len(items) || seen[n] {
				return sdk.BadInput("embedding response: data[" + strconv.Itoa(i) + "].index is not a distinct index into data")
			}
			idx = n
		}
		seen[idx] = true
		vec, err := vector(it.Get("embedding"))
		if err != nil {
			return sdk.BadInput("embedding response: data[" + strconv.Itoa(i) + "].embedding: " + err.Error())
		}
		resp.Vectors[idx] = vec
	}
	if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		p := u.GetInt("prompt_tokens")
		t := u.GetInt("total_tokens")
		if t == 0 {
			t = p
		}
		resp.Usage = &canon.Usage{PromptTokens: p, TotalTokens: t}
	}
	return nil
}

// vector reads an embedding: a base64 string of little-endian float32
// bytes, or an array of numbers.
func vector(v *fastjson.Value) ([]float32, error) {
	if v == nil {
		return nil, sdk.BadInput("missing")
	}
	switch v.Type() {
	case fastjson.TypeString:
		s := v.GetStringBytes()
		raw := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		n, err := base64.StdEncoding.Decode(raw, s)
		if err != nil || n%4 != 0 {
			return nil, sdk.BadInput("not base64 of float32 values")
		}
		out := make([]float32, n/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return out, nil
	case fastjson.TypeArray:
		// The numbers' text as it came, parsed whole (by the host when
		// this runs as .wasm): not a JSON number, such as NaN, or one
		// beyond float32's range is an error naming the element.
		arr, _ := v.Array()
		out, err := sdk.ParseFloat32s(make([]float32, 0, len(arr)), v.MarshalTo(nil))
		if err != nil {
			return nil, sdk.BadInput(err.Error())
		}
		return out, nil
	}
	return nil, sdk.BadInput("neither base64 nor an array")
}
