package sdk

import "github.com/mindrouter/mindrouter/sdk/canon"

// EmbeddingTranslator is implemented by a translator serving routes of kind
// EndpointEmbedding (ABI 2.2). A translator without it answers those ops
// StatusUnsupported.
type EmbeddingTranslator interface {
	// DecodeEmbeddingRequest parses a client embedding request body (meta
	// "route" names the route). Bad client input: return BadInput.
	DecodeEmbeddingRequest(c *Call, body []byte, req *canon.EmbeddingRequest) error
	// EncodeEmbeddingResponse writes the vectors in the client's format,
	// in the encoding the request asked for (see abi.OpEmbedResponseEncode
	// for how the request's choices reach this call).
	EncodeEmbeddingResponse(c *Call, resp *canon.EmbeddingResponse, out *Output) error
}

// EmbeddingAdapter is implemented by an adapter whose engine can embed
// (ABI 2.2). An adapter without it answers StatusUnsupported and the host
// tells the client that the model's backend cannot embed.
type EmbeddingAdapter interface {
	// EncodeEmbeddingRequest writes the backend request body and sets meta
	// "path" (and optionally "method", "content-type") on out.
	EncodeEmbeddingRequest(c *Call, req *canon.EmbeddingRequest, out *Output) error
	// DecodeEmbeddingResponse parses the backend's embedding response.
	DecodeEmbeddingResponse(c *Call, body []byte, resp *canon.EmbeddingResponse) error
}
