package sdk

import (
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// dispatchEmbedTranslator runs the embedding ops of a translator
// (ABI 2.2). The request's vector encoding leaves embed_request_decode as
// meta abi.MetaEncodingFormat and comes back, kept by the host, in the
// meta of embed_response_encode (see EmbeddingTranslator).
func (p *Plugin) dispatchEmbedTranslator(t EmbeddingTranslator, c *Call, op abi.Op, payload []byte) error {
	if op == abi.OpEmbedRequestDecode {
		p.ereq = canon.EmbeddingRequest{}
		if err := t.DecodeEmbeddingRequest(c, payload, &p.ereq); err != nil {
			return err
		}
		p.out.Body = p.ereq.AppendJSON(p.out.Body)
		p.out.SetMeta(abi.MetaModel, p.ereq.Model)
		if p.ereq.EncodingFormat != "" {
			p.out.SetMeta(abi.MetaEncodingFormat, p.ereq.EncodingFormat)
		}
		p.ereq = canon.EmbeddingRequest{} // drop the strings; the JSON is out
		return nil
	}
	// abi.OpEmbedResponseEncode
	if err := p.eresp.DecodeJSON(payload); err != nil {
		return BadInput(err.Error())
	}
	err := t.EncodeEmbeddingResponse(c, &p.eresp, &p.out)
	p.eresp = canon.EmbeddingResponse{} // vectors are large: not kept past the call
	return err
}

// dispatchEmbedAdapter runs the embedding ops of an adapter (ABI 2.2).
func (p *Plugin) dispatchEmbedAdapter(a EmbeddingAdapter, c *Call, op abi.Op, payload []byte) error {
	if op == abi.OpEmbedRequestEncode {
		if err := p.ereq.DecodeJSON(payload); err != nil {
			return BadInput(err.Error())
		}
		err := a.EncodeEmbeddingRequest(c, &p.ereq, &p.out)
		p.ereq = canon.EmbeddingRequest{}
		return err
	}
	// abi.OpEmbedResponseDecode
	p.eresp = canon.EmbeddingResponse{}
	err := a.DecodeEmbeddingResponse(c, payload, &p.eresp)
	if err == nil {
		p.out.Body = p.eresp.AppendJSON(p.out.Body)
		if u := p.eresp.Usage; u != nil {
			p.out.meta = appendMetaInt(p.out.meta, abi.MetaPromptTokens, u.PromptTokens)
		}
	}
	p.eresp = canon.EmbeddingResponse{}
	return err
}
