package sdk

import (
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// RerankTranslator is implemented by a translator serving routes of kind
// EndpointRerank or EndpointScore (ABI 2.2); meta "route" tells which
// route a call is for.
type RerankTranslator interface {
	// DecodeRerankRequest parses a client rerank or score body. Bad client
	// input: return BadInput.
	DecodeRerankRequest(c *Call, body []byte, req *canon.RerankRequest) error
	// EncodeRerankResponse writes the results in the client's format.
	EncodeRerankResponse(c *Call, resp *canon.RerankResponse, out *Output) error
}

// RerankAdapter is implemented by an adapter whose engine can rerank and
// score (ABI 2.2). An adapter without it answers StatusUnsupported and the
// host tells the client that the model's backend cannot.
type RerankAdapter interface {
	// EncodeRerankRequest writes the backend request (req.Score() says
	// rerank or score) and sets meta "path".
	EncodeRerankRequest(c *Call, req *canon.RerankRequest, out *Output) error
	// DecodeRerankResponse parses the backend's answer.
	DecodeRerankResponse(c *Call, body []byte, resp *canon.RerankResponse) error
}

func (p *Plugin) dispatchRerankTranslator(t RerankTranslator, c *Call, op abi.Op, payload []byte) error {
	if op == abi.OpRerankRequestDecode {
		var req canon.RerankRequest
		if err := t.DecodeRerankRequest(c, payload, &req); err != nil {
			return err
		}
		p.out.Body = req.AppendJSON(p.out.Body)
		p.out.SetMeta(abi.MetaModel, req.Model)
		if !req.Score() && !req.ReturnDocuments {
			// Engines return the documents; the response encode drops them.
			p.out.SetMeta(abi.MetaEncodingFormat, abi.NoDocuments)
		}
		return nil
	}
	var resp canon.RerankResponse
	if err := resp.DecodeJSON(payload); err != nil {
		return BadInput(err.Error())
	}
	return t.EncodeRerankResponse(c, &resp, &p.out)
}

func (p *Plugin) dispatchRerankAdapter(a RerankAdapter, c *Call, op abi.Op, payload []byte) error {
	if op == abi.OpRerankRequestEncode {
		var req canon.RerankRequest
		if err := req.DecodeJSON(payload); err != nil {
			return BadInput(err.Error())
		}
		return a.EncodeRerankRequest(c, &req, &p.out)
	}
	var resp canon.RerankResponse
	if err := a.DecodeRerankResponse(c, payload, &resp); err != nil {
		return err
	}
	p.out.Body = resp.AppendJSON(p.out.Body)
	if resp.Usage != nil {
		p.out.meta = appendMetaInt(p.out.meta, abi.MetaPromptTokens, resp.Usage.PromptTokens)
	}
	return nil
}
