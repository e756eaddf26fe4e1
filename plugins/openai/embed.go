package openai

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// The /v1/embeddings dialect, from the OpenAI API reference
// (https://platform.openai.com/docs/api-reference/embeddings/create):
// input is a string or an array of strings (or token arrays, which the
// canonical schema cannot carry: refused), at most 2048 of them, none
// empty; encoding_format is "float" (the default) or "base64", the
// little-endian float32 bytes of each vector in standard base64, which
// the official SDKs decode.

// RouteEmbeddings is the embeddings route's name (meta "route").
const RouteEmbeddings = "embeddings"

// maxEmbeddingInputs is OpenAI's limit on the inputs of one request.
const maxEmbeddingInputs = 2048

// Encodings of the vectors (canon.EmbeddingRequest.EncodingFormat).
const (
	encodingFloat  = "float"
	encodingBase64 = "base64"
)

var _ sdk.EmbeddingTranslator = (*Translator)(nil)

// DecodeEmbeddingRequest parses an embeddings request body into req.
func (t *Translator) DecodeEmbeddingRequest(c *sdk.Call, body []byte, req *canon.EmbeddingRequest) error {
	o, err := jsonread.Object(&t.p, body)
	if err != nil {
		return err
	}
	var model, input, dims, enc, user *fastjson.Value
	jsonread.Visit(o, func(k []byte, v *fastjson.Value) {
		switch string(k) {
		case "model":
			model = v
		case "input":
			input = v
		case "dimensions":
			dims = v
		case "encoding_format":
			enc = v
		case "user":
			user = v
		}
	})
	if model == nil {
		return jsonread.ErrRequired("model")
	}
	var ok bool
	if req.Model, ok = jsonread.Str(model); !ok {
		return jsonread.ErrType("model", "a string")
	}
	if req.Model == "" {
		return jsonread.ErrRequired("model")
	}
	if !utf8.ValidString(req.Model) {
		// The host routes on the name as sent; canonical JSON would carry
		// it with U+FFFD in place of the bad bytes, another name.
		return sdk.BadInput("model must be valid UTF-8")
	}
	if err := decodeEmbeddingInput(input, req); err != nil {
		return err
	}
	if dims != nil {
		n, ok := jsonread.Int(dims)
		if !ok || n < 1 || n > jsonread.MaxInt32 {
			return jsonread.ErrType("dimensions", "a positive integer")
		}
		req.Dimensions = int(n)
	}
	if enc != nil {
		switch {
		case jsonread.IsStr(enc, encodingFloat):
			req.EncodingFormat = encodingFloat
		case jsonread.IsStr(enc, encodingBase64):
			req.EncodingFormat = encodingBase64
		default:
			return jsonread.ErrType("encoding_format", `"float" or "base64"`)
		}
	}
	if user != nil {
		if req.User, ok = jsonread.Str(user); !ok {
			return jsonread.ErrType("user", "a string")
		}
	}
	return nil
}

func decodeEmbeddingInput(v *fastjson.Value, req *canon.EmbeddingRequest) error {
	if v == nil {
		return jsonread.ErrRequired("input")
	}
	switch v.Type() {
	case fastjson.TypeString:
		s, _ := jsonread.Str(v)
		if s == "" {
			return sdk.BadInput("input must not be an empty string")
		}
		req.Input = []string{s}
		return nil
	case fastjson.TypeArray:
	default:
		return jsonread.ErrType("input", "a string or an array of strings")
	}
	arr, _ := v.Array()
	switch {
	case len(arr) == 0:
		return sdk.BadInput("input must not be an empty array")
	case len(arr) > maxEmbeddingInputs:
		return sdk.BadInput("input must have at most " + strconv.Itoa(maxEmbeddingInputs) + " items, got " + strconv.Itoa(len(arr)))
	}
	req.Input = make([]string, len(arr))
	for i, x := range arr {
		switch x.Type() {
		case fastjson.TypeString:
		case fastjson.TypeNumber, fastjson.TypeArray:
			return sdk.BadInput("input: token arrays are not supported by this gateway; send the text")
		default:
			return jsonread.ErrType(jsonread.At("input", i), "a string")
		}
		s, _ := jsonread.Str(x)
		if s == "" {
			return sdk.BadInput(jsonread.At("input", i) + " must not be an empty string")
		}
		req.Input[i] = s
	}
	return nil
}

// EncodeEmbeddingResponse writes {"object":"list","data":[...],"model",
// "usage"}, each vector as numbers or, when the request asked for base64
// (meta encoding_format), as base64 of its little-endian float32 bytes.
func (t *Translator) EncodeEmbeddingResponse(c *sdk.Call, resp *canon.EmbeddingResponse, out *sdk.Output) error {
	b64 := c.Meta(abi.MetaEncodingFormat) == encodingBase64
	b := append(out.Body, `{"object":"list","data":[`...)
	for i, vec := range resp.Vectors {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = jsonw.Int(b, int64(i))
		b = append(b, `,"embedding":`...)
		if b64 {
			b = appendBase64Floats(append(b, '"'), vec)
			b = append(b, '"')
		} else {
			// The shortest decimal that reads back as the same float32
			// (strconv 'g'); a non-finite value, which JSON cannot
			// express, as 0. In the host when this runs as .wasm.
			b = sdk.AppendFloat32s(b, vec, sdk.FloatG)
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	model, _ := c.MetaBytes(abi.MetaModel)
	if len(model) > 0 {
		b = jsonw.Bytes(b, model)
	} else {
		b = jsonw.String(b, resp.Model)
	}
	var prompt, total int
	if u := resp.Usage; u != nil {
		prompt, total = u.PromptTokens, u.TotalTokens
		if total == 0 {
			total = prompt
		}
	}
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = jsonw.Int(b, int64(prompt))
	b = append(b, `,"total_tokens":`...)
	b = jsonw.Int(b, int64(total))
	out.Body = append(b, "}}"...)
	return nil
}

// appendBase64Floats writes the standard base64 of vec's little-endian
// float32 bytes, three floats (12 bytes, 16 characters, no padding) at a
// time, so no byte copy of the vector is needed.
func appendBase64Floats(b []byte, vec []float32) []byte {
	var raw [12]byte
	for len(vec) > 0 {
		n := min(len(vec), 3)
		for i := range n {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(vec[i]))
		}
		b = base64.StdEncoding.AppendEncode(b, raw[:4*n])
		vec = vec[n:]
	}
	return b
}
