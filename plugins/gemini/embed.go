package gemini

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonr"
)

// DecodeEmbeddingRequest reads embedContent ({"content":{parts},
// "outputDimensionality"}) or batchEmbedContents ({"requests":[...]},
// each one such body; their "model" must be the path's, since one call
// embeds with one model).
func (t *Translator) DecodeEmbeddingRequest(c *sdk.Call, body []byte, req *canon.EmbeddingRequest) error {
	v, err := t.p.ParseBytes(body)
	if err != nil {
		return sdk.BadInput("invalid JSON: " + err.Error())
	}
	r := t.rd.Reset(v)
	req.Model = modelName(c)
	one := func(e jsonr.Value) {
		var text []byte
		for _, p := range e.Object("content").Array("parts").All() {
			text = append(text, p.String("text")...)
		}
		req.Input = append(req.Input, string(text))
		if d, ok := e.OptInt("outputDimensionality", 1, 1<<16); ok {
			req.Dimensions = d
		}
	}
	if c.Meta(abi.MetaRoute) == routeBatchEmbed {
		reqs := r.Array("requests")
		if reqs.Len() == 0 {
			r.Get("requests").Fail("must not be empty")
		}
		for _, e := range reqs.All() {
			if m, ok := e.OptString("model"); ok && trimModels(m) != req.Model {
				e.Get("model").Fail("must be the model of the request's path, " + req.Model)
			}
			one(e)
		}
	} else {
		one(r)
	}
	if err := r.Err(); err != nil {
		return sdk.BadInput(err.Error())
	}
	return nil
}

func trimModels(m string) string {
	if len(m) > 7 && m[:7] == "models/" {
		return m[7:]
	}
	return m
}

// EncodeEmbeddingResponse writes {"embedding":{"values":[...]}} or, for
// a batch, {"embeddings":[{"values":[...]},...]}.
func (t *Translator) EncodeEmbeddingResponse(c *sdk.Call, resp *canon.EmbeddingResponse, out *sdk.Output) error {
	b := out.Body[:0]
	values := func(b []byte, vec []float32) []byte {
		b = append(b, `{"values":`...)
		b = sdk.AppendFloat32s(b, vec, sdk.FloatG)
		return append(b, '}')
	}
	if c.Meta(abi.MetaRoute) == routeBatchEmbed {
		b = append(b, `{"embeddings":[`...)
		for i, vec := range resp.Vectors {
			if i > 0 {
				b = append(b, ',')
			}
			b = values(b, vec)
		}
		b = append(b, "]}"...)
	} else {
		b = append(b, `{"embedding":`...)
		var vec []float32
		if len(resp.Vectors) > 0 {
			vec = resp.Vectors[0]
		}
		b = values(b, vec)
		b = append(b, '}')
	}
	out.Body = b
	return nil
}
