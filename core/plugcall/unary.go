package plugcall

import (
	"context"

	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// Unary is the op set of a request-response endpoint kind besides chat
// (ABI 2.2): embedding, rerank and score. Its requests are never streamed
// and never fused.
type Unary struct {
	ReqDecode, RespEncode, ReqEncode, RespDecode abi.Op
	// What names what the engine must be able to do and Code the error
	// code, for the client's error when an adapter cannot.
	What, Code string
}

// Unary op sets.
var (
	Embed  = Unary{abi.OpEmbedRequestDecode, abi.OpEmbedResponseEncode, abi.OpEmbedRequestEncode, abi.OpEmbedResponseDecode, "produce embeddings", "embeddings_unsupported"}
	Rerank = Unary{abi.OpRerankRequestDecode, abi.OpRerankResponseEncode, abi.OpRerankRequestEncode, abi.OpRerankResponseDecode, "rerank or score", "rerank_unsupported"}
)

// EmbedRequest is what the translator reports about a decoded embedding
// (or rerank) request (ABI 2.2).
type EmbedRequest struct {
	Model string
	// EncodingFormat is the client's vector encoding in the translator's
	// words ("" when the client chose none); the gateway hands it back to
	// the response encode, opaque.
	EncodingFormat string
	Canonical      []byte // canonical embedding request JSON (aliases the call buffers)
}

// DecodeUnaryRequest runs the translator's request decode op of u.
func (c *Calls) DecodeUnaryRequest(ctx context.Context, u *Unary, t *pluginhost.Version, body []byte, r *EmbedRequest) error {
	if err := t.Call(ctx, u.ReqDecode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Meta: c.routeMeta(), Payload: body}, &c.t); err != nil {
		return err
	}
	m := c.t.Meta
	r.Model = metaString(m, abi.MetaModel)
	r.EncodingFormat = embedConst(m, abi.MetaEncodingFormat)
	r.Canonical = c.t.Payload
	return nil
}

// EncodeUnaryRequest runs the adapter's request encode op of u. An
// adapter whose engine cannot do it answers a *pluginhost.StatusError of
// abi.StatusUnsupported.
func (c *Calls) EncodeUnaryRequest(ctx context.Context, u *Unary, a *pluginhost.Version, canonical []byte, r *BackendRequest) error {
	if err := a.Call(ctx, u.ReqEncode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Payload: canonical}, &c.a); err != nil {
		return err
	}
	m := c.a.Meta
	r.Method = metaConst(m, abi.MetaMethod, "POST")
	r.Path = embedConst(m, abi.MetaPath)
	if r.Path == "" {
		r.Path = "/"
	}
	r.ContentType = metaConst(m, abi.MetaContentType, "application/json")
	r.Body = c.a.Payload
	return nil
}

// DecodeUnaryResponse runs the adapter's response decode op of u; d gets
// the canonical response and the prompt tokens the backend counted.
func (c *Calls) DecodeUnaryResponse(ctx context.Context, u *Unary, a *pluginhost.Version, body []byte, d *Decoded) error {
	if err := a.Call(ctx, u.RespDecode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Payload: body}, &c.a); err != nil {
		return err
	}
	c.decoded(d)
	return nil
}

// EncodeUnaryResponse runs the translator's response encode op of u, with
// the request's encoding (EmbedRequest.EncodingFormat) in its meta.
func (c *Calls) EncodeUnaryResponse(ctx context.Context, u *Unary, t *pluginhost.Version, h *Header, encoding string, canonical []byte, e *Encoded) error {
	m := c.headerMeta(h)
	if encoding != "" {
		m = abi.AppendMeta(m, abi.MetaEncodingFormat, encoding)
		c.meta = m
	}
	if err := t.Call(ctx, u.RespEncode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Meta: m, Payload: canonical}, &c.t); err != nil {
		return err
	}
	e.Body, e.ContentType = c.t.Payload, metaConst(c.t.Meta, abi.MetaContentType, "")
	return nil
}

// embedConst is metaConst for the values the embedding ops commonly send
// (kept apart so the chat path's list stays as short as it was); "" when
// the key is absent.
func embedConst(m []byte, key string) string {
	v, ok := abi.MetaGet(m, key)
	if !ok || len(v) == 0 {
		return ""
	}
	for _, s := range embedCommon {
		if string(v) == s {
			return s
		}
	}
	return string(v)
}

var embedCommon = [...]string{"float", "base64", "/v1/embeddings", "/api/embed", "/v1/rerank", "/v1/score", abi.NoDocuments}
