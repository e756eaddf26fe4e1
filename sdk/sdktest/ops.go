package sdktest

import (
	"strconv"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Typed helpers: each runs one op the way the host runs it, fails the
// test unless the status is ok, and decodes canonical output. Options add
// meta (Meta) or override the defaults; use Call or Expect to test error
// statuses.

// Expect runs op and fails the test unless the status is want; it returns
// the result (for its Error message, say).
func (h *Harness) Expect(want abi.Status, op abi.Op, opts ...Option) Result {
	h.tb.Helper()
	r := h.Call(op, opts...)
	if r.Status != want {
		h.tb.Fatalf("%s: status %s (%s), want %s", op, r.Status, r.Error, want)
	}
	return r
}

func (h *Harness) ok(op abi.Op, opts []Option) Result {
	h.tb.Helper()
	return h.Expect(abi.StatusOK, op, opts...)
}

func (h *Harness) decode(what string, b []byte, dec func([]byte) error) {
	h.tb.Helper()
	if err := dec(b); err != nil {
		h.tb.Fatalf("%s: the plugin wrote invalid canonical JSON: %v\n%s", what, err, b)
	}
}

// DecodeRequest runs request_decode on a client body and returns the
// canonical request.
func (h *Harness) DecodeRequest(body []byte, opts ...Option) canon.ChatRequest {
	h.tb.Helper()
	r := h.ok(abi.OpRequestDecode, append(opts, Payload(body)))
	var req canon.ChatRequest
	h.decode("request_decode", r.Payload, req.DecodeJSON)
	return req
}

// RequestError runs request_decode on a body the plugin must refuse and
// returns its message (status bad_input).
func (h *Harness) RequestError(body []byte, opts ...Option) string {
	h.tb.Helper()
	return h.Expect(abi.StatusBadInput, abi.OpRequestDecode, append(opts, Payload(body))...).Error
}

// EncodeResponse runs response_encode and returns the client body.
func (h *Harness) EncodeResponse(resp canon.ChatResponse, opts ...Option) []byte {
	h.tb.Helper()
	return h.ok(abi.OpResponseEncode, append(opts, Payload(resp.AppendJSON(nil)))).Payload
}

// EncodeError runs error_encode; the result has the body and any
// MetaStatus override.
func (h *Harness) EncodeError(e canon.Error, opts ...Option) Result {
	h.tb.Helper()
	return h.ok(abi.OpErrorEncode, append(opts, Payload(e.AppendJSON(nil))))
}

// EncodeModels runs models_encode and returns the client body.
func (h *Harness) EncodeModels(list canon.ModelList, opts ...Option) []byte {
	h.tb.Helper()
	return h.ok(abi.OpModelsEncode, append(opts, Payload(list.AppendJSON(nil)))).Payload
}

// EncodeStream drives a whole stream_encode stream, one call per batch of
// chunks (FlagFirst on the first, FlagEnd on the last; end with an empty
// batch to send the trailer alone), carrying the state blob, and returns
// the client bytes.
func (h *Harness) EncodeStream(batches [][]canon.ChatChunk, opts ...Option) []byte {
	h.tb.Helper()
	s := h.Stream(abi.OpStreamEncode, ChunkBatches(batches...), opts...)
	if !s.OK() {
		h.tb.Fatalf("stream_encode call %d: %s: %s", len(s.Calls), s.Status, s.Error)
	}
	return s.Out
}

// EncodeRequest runs request_encode; the result has the backend body and
// meta (path, method, content-type).
func (h *Harness) EncodeRequest(req canon.ChatRequest, opts ...Option) Result {
	h.tb.Helper()
	return h.ok(abi.OpRequestEncode, append(opts, Payload(req.AppendJSON(nil))))
}

// DecodeResponse runs response_decode on a backend body.
func (h *Harness) DecodeResponse(body []byte, opts ...Option) canon.ChatResponse {
	h.tb.Helper()
	r := h.ok(abi.OpResponseDecode, append(opts, Payload(body)))
	var resp canon.ChatResponse
	h.decode("response_decode", r.Payload, resp.DecodeJSON)
	return resp
}

// DecodeStream drives a whole stream_decode stream as Stream does: one
// call per batch of framed events (see SSEEvents, NDJSONLines) until the
// plugin reports the end, then the end call. It returns the chunks and
// whether the plugin reported the end.
func (h *Harness) DecodeStream(batches [][][]byte, opts ...Option) (chunks []canon.ChatChunk, done bool) {
	h.tb.Helper()
	s := h.Stream(abi.OpStreamDecode, batches, opts...)
	if !s.OK() {
		h.tb.Fatalf("stream_decode call %d: %s: %s", len(s.Calls), s.Status, s.Error)
	}
	items, err := SplitItems(s.Out)
	if err != nil {
		h.tb.Fatalf("stream_decode: malformed chunk list: %v", err)
	}
	chunks = make([]canon.ChatChunk, len(items))
	for i, it := range items {
		h.decode("stream_decode chunk "+strconv.Itoa(i), it, chunks[i].DecodeJSON)
	}
	return chunks, s.Done
}

// DecodeError runs error_decode on a backend error response.
func (h *Harness) DecodeError(status int, body []byte, opts ...Option) canon.Error {
	h.tb.Helper()
	r := h.ok(abi.OpErrorDecode, append([]Option{Meta(abi.MetaStatus, strconv.Itoa(status))}, append(opts, Payload(body))...))
	var e canon.Error
	h.decode("error_decode", r.Payload, e.DecodeJSON)
	return e
}

// DecodeProbe runs probe_decode for the manifest probe named probe.
func (h *Harness) DecodeProbe(probe string, body []byte, opts ...Option) canon.Discovery {
	h.tb.Helper()
	r := h.ok(abi.OpProbeDecode, append([]Option{Meta(abi.MetaProbe, probe)}, append(opts, Payload(body))...))
	var d canon.Discovery
	h.decode("probe_decode", r.Payload, d.DecodeJSON)
	return d
}

// DecodeEmbeddingRequest runs embed_request_decode on a client body.
func (h *Harness) DecodeEmbeddingRequest(body []byte, opts ...Option) canon.EmbeddingRequest {
	h.tb.Helper()
	r := h.ok(abi.OpEmbedRequestDecode, append(opts, Payload(body)))
	var req canon.EmbeddingRequest
	h.decode("embed_request_decode", r.Payload, req.DecodeJSON)
	return req
}

// EncodeEmbeddingResponse runs embed_response_encode and returns the
// client body.
func (h *Harness) EncodeEmbeddingResponse(resp canon.EmbeddingResponse, opts ...Option) []byte {
	h.tb.Helper()
	return h.ok(abi.OpEmbedResponseEncode, append(opts, Payload(resp.AppendJSON(nil)))).Payload
}

// EncodeEmbeddingRequest runs embed_request_encode.
func (h *Harness) EncodeEmbeddingRequest(req canon.EmbeddingRequest, opts ...Option) Result {
	h.tb.Helper()
	return h.ok(abi.OpEmbedRequestEncode, append(opts, Payload(req.AppendJSON(nil))))
}

// DecodeEmbeddingResponse runs embed_response_decode on a backend body.
func (h *Harness) DecodeEmbeddingResponse(body []byte, opts ...Option) canon.EmbeddingResponse {
	h.tb.Helper()
	r := h.ok(abi.OpEmbedResponseDecode, append(opts, Payload(body)))
	var resp canon.EmbeddingResponse
	h.decode("embed_response_decode", r.Payload, resp.DecodeJSON)
	return resp
}

// EncodeCountRequest runs count_request_encode (ABI 2.7); the result has
// the backend request body and meta (path, method, content-type).
func (h *Harness) EncodeCountRequest(req canon.ChatRequest, opts ...Option) Result {
	h.tb.Helper()
	return h.ok(abi.OpCountRequestEncode, append(opts, Payload(req.AppendJSON(nil))))
}

// DecodeCountResponse runs count_response_decode (ABI 2.7) on a backend
// body and returns the count.
func (h *Harness) DecodeCountResponse(body []byte, opts ...Option) canon.TokenCount {
	h.tb.Helper()
	r := h.ok(abi.OpCountResponseDecode, append(opts, Payload(body)))
	var tc canon.TokenCount
	h.decode("count_response_decode", r.Payload, tc.DecodeJSON)
	return tc
}
