package sdk

import "github.com/mindrouter/mindrouter/sdk/canon"

// EmbeddingTranslator is implemented by a translator serving routes of kind
// EndpointEmbedding (ABI 2.2). A translator without it answers those ops
// StatusUnsupported. The gateway calls the embedding ops unfused, even when
// the translator and the adapter are components of one bundle: each call
// names its component in the header as usual.
//
// The client's choice of vector encoding travels outside the canonical
// response: set req.EncodingFormat in DecodeEmbeddingRequest (in the
// dialect's own words, e.g. "float" or "base64"); the SDK reports it to the
// host as meta abi.MetaEncodingFormat, and the host hands it back on the
// response encode, where c.Meta(abi.MetaEncodingFormat) reads it. The
// adapter never sees it as a wire choice: canonical vectors are numbers.
type EmbeddingTranslator interface {
	// DecodeEmbeddingRequest parses a client embedding request body (meta
	// "route" names the route). Bad client input: return BadInput. The SDK
	// reports req.Model (abi.MetaModel) and req.EncodingFormat
	// (abi.MetaEncodingFormat, when not empty) to the host.
	DecodeEmbeddingRequest(c *Call, body []byte, req *canon.EmbeddingRequest) error
	// EncodeEmbeddingResponse writes the vectors in the client's format,
	// in the encoding the request asked for: c.Meta(abi.MetaEncodingFormat)
	// is the EncodingFormat DecodeEmbeddingRequest set ("" when none). Meta
	// abi.MetaModel, abi.MetaID and abi.MetaCreated carry the gateway's
	// identity of the response, as for chat.
	EncodeEmbeddingResponse(c *Call, resp *canon.EmbeddingResponse, out *Output) error
}

// EmbeddingAdapter is implemented by an adapter whose engine can embed
// (ABI 2.2). An adapter without it answers StatusUnsupported and the host
// tells the client that the model's backend cannot produce embeddings (a
// 400 in the client's dialect). Backend error responses go to DecodeError,
// as for chat.
type EmbeddingAdapter interface {
	// EncodeEmbeddingRequest writes the backend request body and sets meta
	// "path" (and optionally "method", "content-type") on out. The request
	// is never streamed. req.EncodingFormat is the client's and may be
	// ignored: ask the backend for whichever encoding DecodeEmbeddingResponse
	// reads best.
	EncodeEmbeddingRequest(c *Call, req *canon.EmbeddingRequest, out *Output) error
	// DecodeEmbeddingResponse parses the backend's embedding response: one
	// vector per input, in input order. The SDK reports resp.Usage's
	// prompt tokens (abi.MetaPromptTokens) when it is set.
	DecodeEmbeddingResponse(c *Call, body []byte, resp *canon.EmbeddingResponse) error
}
