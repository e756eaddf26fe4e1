package sdk

import (
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// embedTranslator is a chat translator that also embeds: it takes one
// input per line of the body, the model from the body's first word, and
// writes vectors as "n:encoding".
type embedTranslator struct{ fakeTranslator }

func (embedTranslator) DecodeEmbeddingRequest(c *Call, body []byte, req *canon.EmbeddingRequest) error {
	if len(body) == 0 {
		return BadInput("input is required")
	}
	if string(body) == "panic" {
		panic("embed boom")
	}
	lines := strings.Split(string(body), "\n")
	model, enc, _ := strings.Cut(lines[0], " ")
	req.Model, req.EncodingFormat, req.Input = model, enc, lines[1:]
	return nil
}

func (embedTranslator) EncodeEmbeddingResponse(c *Call, resp *canon.EmbeddingResponse, out *Output) error {
	out.Body = append(out.Body, c.Meta(abi.MetaModel)+"/"+resp.Model+":"...)
	for _, v := range resp.Vectors {
		out.Body = append(out.Body, strings.Repeat("x", len(v))+"|"...)
	}
	out.Body = append(out.Body, c.Meta(abi.MetaEncodingFormat)...)
	return nil
}

// embedAdapter embeds each input as a vector of its length.
type embedAdapter struct{ fakeAdapter }

func (embedAdapter) EncodeEmbeddingRequest(c *Call, req *canon.EmbeddingRequest, out *Output) error {
	out.SetMeta(abi.MetaPath, "/embed")
	out.Body = append(out.Body, req.Model+":"+strings.Join(req.Input, ",")...)
	return nil
}

func (embedAdapter) DecodeEmbeddingResponse(c *Call, body []byte, resp *canon.EmbeddingResponse) error {
	if string(body) == "bad" {
		return BadInput("not an embedding response")
	}
	resp.Model = "m"
	for _, w := range strings.Fields(string(body)) {
		resp.Vectors = append(resp.Vectors, make([]float32, len(w)))
	}
	if len(resp.Vectors) > 0 {
		resp.Usage = &canon.Usage{PromptTokens: len(resp.Vectors), TotalTokens: len(resp.Vectors)}
	}
	return nil
}

func TestEmbed_TranslatorDispatch(t *testing.T) {
	p := NewTranslator(Manifest{Name: "t"}, embedTranslator{})
	r := run(t, p, abi.OpEmbedRequestDecode, callIdx(0, 0, 0, nil, metaList(abi.MetaRoute, "embeddings"), []byte("e5 base64\na\nbc")))
	if r.Status != abi.StatusOK {
		t.Fatalf("decode: %s %s", r.Status, r.Error)
	}
	if r.Meta[abi.MetaModel] != "e5" || r.Meta[abi.MetaEncodingFormat] != "base64" || len(r.Meta) != 2 {
		t.Errorf("decode meta %v", r.Meta)
	}
	var req canon.EmbeddingRequest
	if err := req.DecodeJSON(r.Payload); err != nil || req.Model != "e5" || len(req.Input) != 2 || req.Input[1] != "bc" || req.EncodingFormat != "base64" {
		t.Errorf("canonical request %s: %+v %v", r.Payload, req, err)
	}

	// No encoding chosen: no encoding meta (the translator's default applies).
	r = run(t, p, abi.OpEmbedRequestDecode, callIdx(0, 0, 0, nil, nil, []byte("e5\na")))
	if _, ok := r.Meta[abi.MetaEncodingFormat]; ok || r.Meta[abi.MetaModel] != "e5" {
		t.Errorf("meta without an encoding: %v", r.Meta)
	}

	resp := canon.EmbeddingResponse{Model: "e5", Vectors: [][]float32{{1, 2}, {3}}}
	r = run(t, p, abi.OpEmbedResponseEncode, callIdx(0, 0, 0, nil,
		metaList(abi.MetaModel, "alias", abi.MetaEncodingFormat, "base64"), resp.AppendJSON(nil)))
	if r.Status != abi.StatusOK || string(r.Payload) != "alias/e5:xx|x|base64" {
		t.Errorf("encode: %s %q %s", r.Status, r.Payload, r.Error)
	}

	for _, tc := range []struct {
		name    string
		op      abi.Op
		payload string
		want    abi.Status
		msg     string
	}{
		{"bad input", abi.OpEmbedRequestDecode, "", abi.StatusBadInput, "input is required"},
		{"panic", abi.OpEmbedRequestDecode, "panic", abi.StatusPluginError, "embed boom"},
		{"bad canonical", abi.OpEmbedResponseEncode, `{"vectors":[["x"]]}`, abi.StatusBadInput, "vectors[0][0]"},
	} {
		r := run(t, p, tc.op, callIdx(0, 0, 0, nil, nil, []byte(tc.payload)))
		if r.Status != tc.want || !strings.Contains(r.Error, tc.msg) {
			t.Errorf("%s: %s %q", tc.name, r.Status, r.Error)
		}
	}
}

func TestEmbed_AdapterDispatch(t *testing.T) {
	p := NewAdapter(Manifest{Name: "a"}, embedAdapter{})
	req := canon.EmbeddingRequest{Model: "e5", Input: []string{"a", "b"}, EncodingFormat: "base64"}
	r := run(t, p, abi.OpEmbedRequestEncode, callIdx(0, 0, 0, nil, nil, req.AppendJSON(nil)))
	if r.Status != abi.StatusOK || string(r.Payload) != "e5:a,b" || r.Meta[abi.MetaPath] != "/embed" {
		t.Fatalf("encode: %s %q %v %s", r.Status, r.Payload, r.Meta, r.Error)
	}
	r = run(t, p, abi.OpEmbedResponseDecode, callIdx(0, 0, 0, nil, nil, []byte("abc de")))
	if r.Status != abi.StatusOK || r.Meta[abi.MetaPromptTokens] != "2" {
		t.Fatalf("decode: %s %v %s", r.Status, r.Meta, r.Error)
	}
	var resp canon.EmbeddingResponse
	if err := resp.DecodeJSON(r.Payload); err != nil || len(resp.Vectors) != 2 || len(resp.Vectors[0]) != 3 || resp.Usage.PromptTokens != 2 {
		t.Errorf("canonical response %s: %v", r.Payload, err)
	}
	// No usage from the backend: no prompt tokens meta.
	r = run(t, p, abi.OpEmbedResponseDecode, callIdx(0, 0, 0, nil, nil, nil))
	if _, ok := r.Meta[abi.MetaPromptTokens]; r.Status != abi.StatusOK || ok {
		t.Errorf("empty decode: %s %v", r.Status, r.Meta)
	}
	r = run(t, p, abi.OpEmbedResponseDecode, callIdx(0, 0, 0, nil, nil, []byte("bad")))
	if r.Status != abi.StatusBadInput || len(r.Payload) != 0 {
		t.Errorf("bad decode: %s %q", r.Status, r.Payload)
	}
	r = run(t, p, abi.OpEmbedRequestEncode, callIdx(0, 0, 0, nil, nil, []byte(`{"input":"one"}`)))
	if r.Status != abi.StatusBadInput {
		t.Errorf("bad canonical request: %s", r.Status)
	}
}

// A component without the embedding interfaces answers the embedding ops
// StatusUnsupported; so does a component of the other kind in a bundle.
func TestEmbed_Unsupported(t *testing.T) {
	plain := NewBundle("b", "1", TranslatorPart(Manifest{Name: "t"}, fakeTranslator{}), AdapterPart(Manifest{Name: "a"}, fakeAdapter{}))
	embed := NewBundle("e", "1", TranslatorPart(Manifest{Name: "t"}, embedTranslator{}), AdapterPart(Manifest{Name: "a"}, embedAdapter{}))
	req := canon.EmbeddingRequest{Model: "e5", Input: []string{"a"}}
	for _, tc := range []struct {
		p      *Plugin
		op     abi.Op
		ti, ai uint16
		want   abi.Status
	}{
		{plain, abi.OpEmbedRequestDecode, 0, 0, abi.StatusUnsupported},
		{plain, abi.OpEmbedResponseEncode, 0, 0, abi.StatusUnsupported},
		{plain, abi.OpEmbedRequestEncode, 0, 1, abi.StatusUnsupported},
		{plain, abi.OpEmbedResponseDecode, 0, 1, abi.StatusUnsupported},
		{embed, abi.OpEmbedRequestEncode, 0, 1, abi.StatusOK},
		{embed, abi.OpEmbedRequestEncode, 0, 0, abi.StatusUnsupported}, // index 0 is the translator
		{embed, abi.OpEmbedRequestDecode, 1, 0, abi.StatusUnsupported}, // index 1 is the adapter
		{embed, abi.OpEmbedResponseDecode, 0, 7, abi.StatusUnsupported},
	} {
		payload := req.AppendJSON(nil)
		if tc.op == abi.OpEmbedRequestDecode {
			payload = []byte("e5\na")
		}
		r := run(t, tc.p, tc.op, callIdx(tc.ti, tc.ai, 0, nil, nil, payload))
		if r.Status != tc.want {
			t.Errorf("%s %s t=%d a=%d: %s %s", tc.p.Manifest().Name, tc.op, tc.ti, tc.ai, r.Status, r.Error)
		}
	}
}
