package plugcall

import (
	"context"

	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// EmbedRequest is what the translator reports about a decoded embedding
// request (ABI 2.2).
type EmbedRequest struct {
	Model string
	// EncodingFormat is the client's vector encoding in the translator's
	// words ("" when the client chose none); the gateway hands it back to
	// the response encode, opaque.
	EncodingFormat string
	Canonical      []byte // canonical embedding request JSON (aliases the call buffers)
}

// DecodeEmbedRequest runs the translator's embed_request_decode op.
func (c *Calls) DecodeEmbedRequest(ctx context.Context, t *pluginhost.Version, body []byte, r *EmbedRequest) error {
	if err := t.Call(ctx, abi.OpEmbedRequestDecode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Meta: c.routeMeta(), Payload: body}, &c.t); err != nil {
		return err
	}
	m := c.t.Meta
	r.Model = metaString(m, abi.MetaModel)
	r.EncodingFormat = embedConst(m, abi.MetaEncodingFormat)
	r.Canonical = c.t.Payload
	return nil
}

// EncodeEmbedRequest runs the adapter's embed_request_encode op. An
// adapter whose engine cannot embed answers a *pluginhost.StatusError of
// abi.StatusUnsupported.
func (c *Calls) EncodeEmbedRequest(ctx context.Context, a *pluginhost.Version, canonical []byte, r *BackendRequest) error {
	if err := a.Call(ctx, abi.OpEmbedRequestEncode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Payload: canonical}, &c.a); err != nil {
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

// DecodeEmbedResponse runs the adapter's embed_response_decode op; d gets
// the canonical response and the prompt tokens the backend counted.
func (c *Calls) DecodeEmbedResponse(ctx context.Context, a *pluginhost.Version, body []byte, d *Decoded) error {
	if err := a.Call(ctx, abi.OpEmbedResponseDecode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Payload: body}, &c.a); err != nil {
		return err
	}
	c.decoded(d)
	return nil
}

// EncodeEmbedResponse runs the translator's embed_response_encode op, with
// the request's encoding (EmbedRequest.EncodingFormat) in its meta.
func (c *Calls) EncodeEmbedResponse(ctx context.Context, t *pluginhost.Version, h *Header, encoding string, canonical []byte, e *Encoded) error {
	m := c.headerMeta(h)
	if encoding != "" {
		m = abi.AppendMeta(m, abi.MetaEncodingFormat, encoding)
		c.meta = m
	}
	if err := t.Call(ctx, abi.OpEmbedResponseEncode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Meta: m, Payload: canonical}, &c.t); err != nil {
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

var embedCommon = [...]string{"float", "base64", "/v1/embeddings", "/api/embed"}
