// Package abi is MindRouter's plugin ABI, version 2: the names, numbers and
// byte layouts shared by the gateway (host) and a plugin (guest). It imports
// only the standard library so both sides, and third-party hosts or guests,
// can use it.
//
// # Module contract
//
// A plugin is a WASI preview 1 reactor built by the standard Go toolchain:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o p.wasm ./p
//
// It exports (all integers little-endian, i32 = uint32):
//
//	_initialize                       Go runtime and package init (reactor start function)
//	mr_abi_version() -> i32           Version: major<<16 | minor
//	mr_buf(min_cap i32) -> i32        grow the guest input buffer to >= min_cap bytes and return
//	                                  its address; the address stays valid until the next mr_buf
//	mr_init(in_len i32) -> i64        plugin config (JSON) in the input buffer; returns a packed
//	                                  result whose payload is the manifest JSON
//	mr_call(op i32, in_len i32) -> i64 one unit of work; input laid out as a call header
//	                                  followed by [state][meta][payload]; returns a packed result
//
// and may import only module "mr_v2" (this ABI's major version: a host that
// does not speak v2 fails at link time with a clear error) and the
// wasi_snapshot_preview1 functions the Go runtime needs. The host rejects any
// other import before instantiating.
//
//	mr_v2.log(level i32, ptr i32, len i32)   one log line (slog level numbers)
//	mr_v2.f32_format(style i32, src i32, n i32, dst i32, dst_cap i32) -> i64
//	                                  (2.6) the n little-endian float32s at src as a
//	                                  JSON array of numbers (f32json.Append, style
//	                                  f32json.Style) into dst; returns the array's
//	                                  length, complete only when <= dst_cap
//	mr_v2.f32_parse(src i32, len i32, dst i32, dst_cap i32) -> i64
//	                                  (2.6) the JSON array of numbers at src
//	                                  (f32json.Scan) as little-endian float32s into
//	                                  dst; returns the count, stored only up to
//	                                  dst_cap, or -(code | index<<8) for an error
//	                                  (f32json.ErrResult)
//
// Both float functions check their regions against the guest's memory
// (f32json.CodeMemory when outside it or overlapping); the SDK calls them
// (sdk.AppendFloat32s, sdk.ParseFloat32s) so that decimal vectors do not
// pay Go's strconv inside WebAssembly.
//
// # Changes from v1
//
// v2 makes metadata length-prefixed (v1's key\0value\0 let a client put a
// NUL in a routed field, such as a model name, and forge the pairs after
// it), names every meta key in this package (Meta* constants), adds the
// usage and finish-reason meta of OpResponseDecode and OpStreamDecode, and
// has OpErrorEncode frame mid-stream errors itself (meta "stream" = "1").
//
// # Endpoint kinds and the ops they use
//
// A translator route declares an endpoint kind (sdk.Route.Kind). The host
// runs the same pipeline for every kind — authenticate, limit, read the
// body, pre-check it, decode, admit, attempt, respond or relay, finish —
// and the kind says which ops fill it:
//
//	kind        translator ops                          adapter ops
//	chat        request_decode, response_encode,        request_encode, response_decode,
//	            stream_encode, error_encode             stream_decode, error_decode
//	            (or the fused ops when both are in one module)
//	                                                    near the context limit, optionally,
//	                                                    count_request_encode and
//	                                                    count_response_decode (2.7)
//	models      models_encode, error_encode             — (the host lists discovered models)
//	embedding   embed_request_decode,                   embed_request_encode,
//	            embed_response_encode, error_encode     embed_response_decode, error_decode
//	tokenize    request_decode, tokens_encode,          — (the host counts the
//	            error_encode                            canonical request's tokens)
//	rerank,     rerank_request_decode,                  rerank_request_encode,
//	score       rerank_response_encode, error_encode    rerank_response_decode, error_decode
//	responses   as chat (2.5); the host keeps the      as chat
//	            client's state around them (below)
//	completion  reserved (a legacy text completion is a chat route whose
//	            canonical request has a prompt); its ops would arrive with a
//	            later minor version as optional SDK interfaces, so existing
//	            plugins keep working.
//	            A route of a kind the host does not serve answers 404.
//
// A responses route (OpenAI's Responses API) runs the chat ops, and the
// host keeps the state the API stores for its client: before
// request_decode it consumes previous_response_id and conversation from
// the body and splices the stored history into input (the translator
// answers bad_input if it still finds either: the gateway keeps no state),
// and it stores the answer the translator wrote. The host's request id is
// "chatcmpl-<32 hex>" (MetaID); the translator names the response
// "resp_<the same hex>", which is how the host finds what it stored.
//
// Every adapter also serves probe_decode for the probes in its manifest.
// An op a plugin does not implement answers StatusUnsupported.
//
// What the host fills and reads, per op, is documented on each Op
// constant; meta keys are the Meta* constants below and nothing else.
//
// # Packed results
//
// mr_init and mr_call return ptr<<32 | len: the address and length of a
// guest-owned result area that stays valid until the next call on that
// instance. The host reads it in place and copies what it keeps.
//
//	result area:  u32 status | u32 flags | u32 state_len | u32 meta_len |
//	              u32 payload_len | u32 error_len |
//	              [state][meta][payload][error]
//
// # Call header (HeaderSize bytes, written by the host at the buffer start)
//
//	u32 header_size   = HeaderSize; lets 1.x append fields
//	u32 flags         FlagFirst, FlagEnd
//	u32 state_len     per-stream state blob, owned by the host between calls
//	u32 meta_len      length-prefixed key/value pairs (see AppendMeta)
//	u32 payload_len   the body, or a list of u32-length-prefixed items
//	u16 translator    component index of the translator the call is for
//	u16 adapter       component index of the adapter the call is for
//	u64 request_id    for log correlation only
//
// # Bundles and components
//
// A module serves one or more components, each a translator or an adapter
// with its own manifest. A module with one component answers mr_init with
// that component's manifest; a bundle answers with a manifest of kind
// "bundle" whose "components" list the component manifests in index
// order. Every call names its components in the header: translator ops
// use the translator index, adapter ops the adapter index (0 and 0 in a
// module of one component).
//
// # Fused ops
//
// When a request's translator and adapter are components of the same
// module, the host makes one call per direction instead of two, and the
// canonical value passes between them as Go values inside the guest, never
// as JSON (see OpFusedRequest, OpFusedResponse, OpFusedStream); a pair
// sharing a wire dialect may even skip the canonical form and rewrite the
// bytes (the SDK's same-dialect patches). Both paths must give the same
// client bytes; the conformance kit checks it. The host
// chooses the backend, and with it the adapter, before the fused request
// call, from the routing fields it reads natively (sdk.Route.Routing).
//
// # Statelessness
//
// Any pooled instance may serve any call. Per-stream translation state is an
// opaque blob returned by the guest in the result (state_len > 0 replaces it;
// FlagStateKeep in the result flags keeps the previous one) and handed back by
// the host on the next call of that stream. A plugin must not rely on memory
// of earlier calls.
//
// # Errors
//
// Plugin errors are data: a status >= StatusBadInput with a UTF-8 message.
// A trap, a timeout or a malformed result is a protocol violation; the host
// discards the instance.
package abi

import (
	"encoding/binary"
	"errors"
)

// ABI version 2.7. A host loads plugins of its major version and of any
// minor version up to its own.
//
//   - 2.1: the canonical model list (models_encode) carries each model's
//     "backends" (names of the backends serving it). Older plugins ignore
//     it; older hosts send none.
//   - 2.2: canonical requests may be legacy text completions
//     (canon.ChatRequest.Prompt); tokenize routes (OpTokensEncode); images
//     given by URL fetched by the host for adapters that ask
//     (StatusNeedImages, MetaImage); embedding vectors travel as base64
//     float32s; rerank and score routes (OpRerank* ops); embedding ops
//     (OpEmbedRequestDecode, OpEmbedResponseEncode,
//     OpEmbedRequestEncode, OpEmbedResponseDecode) for routes of kind
//     "embedding", with MetaEncodingFormat carrying the client's vector
//     encoding from the request decode to the response encode; the canonical model list carries loaded, size_bytes,
//     family and capabilities; a models route that declares a routing
//     model field (sdk.Route.Routing.Model) is a one-model route: the host
//     reads the body, answers 404 for an unknown model, and passes
//     MetaModel with a list holding that model only.
//   - 2.3: MetaMaxOutput on request_encode and the fused request op: the
//     output cap the host sets from the user's token budget (the SDK
//     applies it to ChatRequest.MaxTokens). An older plugin ignores it;
//     the host then cannot cap its output (see core/quota).
//   - 2.4: per-model probes (sdk.Probe.PerModel, Body with {{model}}):
//     the host runs them once per discovered model, with MetaModel on
//     probe_decode; MetaModelCaps on request_encode and the fused request
//     op: the model's canonical capabilities on the chosen backend, when
//     known (the SDK refuses images without "vision" and tools without
//     "tools" with bad_input). An older plugin ignores both.
//   - 2.5: routes of kind "responses" (OpenAI's Responses API) are
//     served: they run the chat ops; the host keeps the state
//     (previous_response_id, conversation) and splices the stored
//     history into the request body's input before request_decode.
//   - 2.6: the host provides mr_v2.f32_format and mr_v2.f32_parse (float32
//     vectors as JSON numbers, formatted and parsed natively; see the module
//     contract above). A plugin that imports them needs a 2.6 host: an
//     older one refuses the import at load, naming it.
//     Also in 2.6: sdk.Routing.Vision, Tools and Structured — markers
//     (PATH, PATH=VALUE, *.KEY, *.KEY=VALUE) of what a request needs from
//     its model, read natively by the host in its pre-check scan before
//     admission, so a request is placed only on backends whose model can
//     serve it (else 400 model_capability); a route declaring none needs
//     nothing.
//   - 2.7: token counting is an adapter operation. An adapter whose
//     engine counts a request's input tokens with the model's own
//     tokenizer and chat template (vLLM's /tokenize) serves
//     OpCountRequestEncode and OpCountResponseDecode and says so in its
//     manifest ("counts_tokens": true; the SDK sets it for an adapter
//     implementing sdk.TokenCountAdapter). Near a model's context limit
//     the host asks it for the count request, sends that to the backend
//     itself (answers memoised per backend, model and body; a backend
//     without the route is not asked again for a while) and has the
//     adapter read the answer. An adapter that does not say so (Ollama's,
//     or any plugin of an older minor version) is never called for them:
//     the host counts offline, as it does when counting fails. An older
//     host never calls them.
//   - 2.8: route paths may be templates with captures
//     ("/v1beta/models/{model}:generateContent"; a capture matches any
//     non-empty text, '/' and ':' included: see core/pathtmpl); a route
//     may be selected by a header or query parameter (sdk.Route.Select:
//     "header:x-goog-api-key", "query:alt=sse"), so two dialects share
//     one method and path; the model may come from a capture, a query
//     parameter or a header ("path:model", "query:NAME", "header:NAME"
//     in sdk.Routing.Model) as well as the body, and the stream flag from
//     the route itself (Routing.StreamByDflt on a route its path or a
//     selector picks: Gemini's :streamGenerateContent); a route may
//     declare where else its client sends the key (sdk.Route.Credentials:
//     "header:x-goog-api-key", "query:key"), which the host checks before
//     reading the body and removes from everything it logs, records or
//     passes on. Every translator op of such a route gets the captures as
//     meta MetaCapturePrefix+NAME and the query string, less the
//     credential parameters, as MetaQuery. A plugin of an older minor
//     version declares none of these and is served as before; an older
//     host refuses a 2.8 plugin (its minor is higher), so a route it could
//     not match is never half served. Also in 2.8: a models route that
//     lists no single model may be marked public (sdk.Route.Public:
//     Ollama's GET / and /api/version connectivity probes), answered
//     without a key from an empty model list; on any other route the
//     mark is ignored. And, additive (an older plugin omits them): the
//     meta keys "choices" (MetaChoices: sequences a request generates)
//     and "output_tokens" (MetaOutputTokens: a decode's estimate of the
//     output it carried), which the host uses to reserve and to charge a
//     stream that ends without usage.
//   - 2.9, additive: a translator's request decode may leave itself a
//     note for the answer (MetaEcho: bytes the host hands back, as they
//     are, to the response, stream and error encodes of the same
//     request; the OpenAI Responses translator keeps there the request
//     fields its Response object repeats and the namespaced tools it
//     flattened) and name the tools it did not offer the model
//     (MetaDroppedTools: the host answers with the
//     X-MindRouter-Dropped-Tools header); a responses-kind route's
//     translator ops learn the state ids the host's keeper consumed
//     (MetaKeptPrefix). An older host passes none of them: the
//     translator answers as it did. Also "think_default"
//     (MetaThinkDefault: the operator's thinking default for the model),
//     which an older plugin ignores, leaving the model's own default.
//   - 2.10, additive: a fused stream call may leave the host the shape
//     of the events that follow (MetaStreamShape, package sdk/shape):
//     an event's literal bytes around its strings and the client output
//     they make. The host translates a matching event itself, without a
//     call, until a call's result replaces the shape or leaves none. An
//     older host ignores it and calls the plugin for every batch.
//   - 2.11, additive: a fused response call may leave the host the shape
//     of the answers that follow (MetaResponseShape, sdk/shape's
//     Response): an answer's literal bytes around its strings and
//     integers, the client output they make with the gateway's id and
//     created, and which integers are the usage. The host keeps it for the
//     call's metadata but id and created and translates a matching answer
//     itself. An older host ignores it.
const (
	VersionMajor = 2
	VersionMinor = 11
	Version      = VersionMajor<<16 | VersionMinor
)

// Module, export and import names.
const (
	ImportModule     = "mr_v2"
	ImportLog        = "log"
	ImportF32Format  = "f32_format" // 2.6
	ImportF32Parse   = "f32_parse"  // 2.6
	ExportInitialize = "_initialize"
	ExportABIVersion = "mr_abi_version"
	ExportBuf        = "mr_buf"
	ExportInit       = "mr_init"
	ExportCall       = "mr_call"
)

// Sizes of the fixed headers.
const (
	HeaderSize       = 32
	ResultHeaderSize = 24
)

// Op names one unit of work. Translator ops convert between a client's API
// format and the canonical schema; adapter ops between the canonical schema
// and a backend's wire format.
type Op uint32

// Translator ops. Every translator op gets meta MetaRoute (the route's
// name) and MetaKind (its endpoint kind).
const (
	// OpRequestDecode: payload = client request body. Output payload =
	// canonical request JSON; output meta MetaModel, MetaStream and
	// MetaIncludeUsage ("1" or "0"), and MetaMaxTokens when the client set
	// one, repeat the fields the host routes and schedules on, so it need
	// not parse the payload (the SDK sets them).
	OpRequestDecode Op = 1
	// OpResponseEncode: payload = canonical response JSON; meta MetaID,
	// MetaModel, MetaCreated. Output = client response body.
	OpResponseEncode Op = 2
	// OpStreamEncode: payload = list of canonical chunk JSON items; meta as
	// OpResponseEncode plus MetaIncludeUsage. FlagFirst on the first call of
	// a stream, FlagEnd on the last (which may carry no items): the guest
	// then writes its trailer. Output = client stream bytes.
	OpStreamEncode Op = 3
	// OpErrorEncode: payload = canonical error JSON. Output = client error
	// body; output meta MetaStatus may override the HTTP status. With meta
	// MetaStream = "1" the error ends an open stream: the output is written
	// to the stream as is, so it must be framed the dialect's way (an SSE
	// event, an NDJSON line).
	OpErrorEncode Op = 4
	// OpModelsEncode: payload = canonical model list JSON (each model's
	// id, owned_by, created, context_length and, since 2.1, backends;
	// since 2.2 loaded, size_bytes, family, capabilities). With meta
	// MetaModel (2.2, a one-model route) the list holds that model only.
	// Output = body.
	OpModelsEncode Op = 5
	// OpEmbedRequestDecode (2.2): payload = client embedding request body;
	// meta MetaRoute, MetaKind. Output = canonical embedding request JSON;
	// output meta MetaModel, and MetaEncodingFormat when the client chose
	// an encoding of the vectors (the SDK sets both from the request).
	OpEmbedRequestDecode Op = 6
	// OpEmbedResponseEncode (2.2): payload = canonical embedding response
	// JSON (vectors as numbers, whatever the client asked for); meta
	// MetaRoute, MetaKind, MetaID, MetaModel, MetaCreated, and
	// MetaEncodingFormat as embed_request_decode reported it: the host
	// keeps the request's choice and hands it back here, so the translator
	// writes the vectors in the encoding its client asked for without the
	// canonical response carrying it. Output = client response body.
	OpEmbedResponseEncode Op = 7
	// OpTokensEncode (2.2): payload = canonical token count JSON (count,
	// max_model_len, estimate) of a tokenize route's request, which the
	// host decoded with request_decode and counted. Output = client body.
	OpTokensEncode Op = 8
	// OpRerankRequestDecode (2.2): payload = client rerank or score
	// request body (meta MetaRoute says which). Output = canonical rerank
	// request JSON; output meta MetaModel.
	OpRerankRequestDecode Op = 9
	// OpRerankResponseEncode (2.2): payload = canonical rerank response
	// JSON; meta MetaID, MetaModel, MetaCreated. Output = client body.
	OpRerankResponseEncode Op = 10
)

// Adapter ops.
const (
	// OpRequestEncode: payload = canonical request JSON; meta
	// MetaContextLength when the gateway knows the model's context window
	// on the chosen backend (the SDK sets ChatRequest.ContextLength from
	// it). Output = backend request body; output meta MetaMethod, MetaPath,
	// MetaContentType.
	OpRequestEncode Op = 16
	// OpResponseDecode: payload = backend response body. Output = canonical
	// response JSON; output meta MetaPromptTokens, MetaCompletionTokens,
	// MetaReasoningTokens, MetaCachedTokens (when the backend reported
	// usage) and MetaFinishReason (of the first choice), set by the SDK.
	OpResponseDecode Op = 17
	// OpStreamDecode: payload = list of framed backend events (SSE data
	// payloads or NDJSON lines, already split by the host). Output = list of
	// canonical chunk JSON items. FlagFirst/FlagEnd as for OpStreamEncode.
	// Output meta as OpResponseDecode for the usage and finish reason seen
	// in this batch's chunks (the last one wins), set by the SDK.
	OpStreamDecode Op = 18
	// OpErrorDecode: meta MetaStatus = backend HTTP status; payload =
	// backend body. Output = canonical error JSON.
	OpErrorDecode Op = 19
	// OpProbeDecode: meta MetaProbe = probe name from the manifest and
	// MetaStatus = its HTTP status; payload = the probe's response body.
	// Output = canonical discovery JSON.
	OpProbeDecode Op = 20
	// OpEmbedRequestEncode (2.2): payload = canonical embedding request
	// JSON. Output = backend request body; output meta MetaMethod,
	// MetaPath, MetaContentType. StatusUnsupported: the engine cannot
	// embed (the host answers the client 400). The adapter asks its
	// backend for whatever encoding it reads best: the client's encoding
	// is the translator's business (OpEmbedResponseEncode).
	OpEmbedRequestEncode Op = 21
	// OpEmbedResponseDecode (2.2): payload = backend response body.
	// Output = canonical embedding response JSON; output meta
	// MetaPromptTokens when the backend counted them (set by the SDK from
	// the response's usage). Backend errors go to OpErrorDecode as for
	// chat.
	OpEmbedResponseDecode Op = 22
	// OpRerankRequestEncode (2.2): payload = canonical rerank request
	// JSON. Output = backend request body; output meta MetaMethod,
	// MetaPath, MetaContentType. StatusUnsupported: the engine cannot
	// rerank or score (the host answers the client 400).
	OpRerankRequestEncode Op = 23
	// OpRerankResponseDecode (2.2): payload = backend response body.
	// Output = canonical rerank response JSON; output meta
	// MetaPromptTokens when the backend counted them.
	OpRerankResponseDecode Op = 24
	// OpCountRequestEncode (2.7): payload = canonical request JSON; meta
	// MetaContextLength when known, and MetaImage pairs after
	// StatusNeedImages as for OpRequestEncode. Output = the backend
	// request that counts the request's input tokens as the engine will
	// see them for generation (chat template, tools, images); output meta
	// MetaMethod, MetaPath, MetaContentType. The host sends it (it owns the
	// connection, the time limit and the memo of answers) and passes a 200
	// answer's body to OpCountResponseDecode. StatusUnsupported: the
	// engine cannot count this request (the host counts it offline).
	// Served only by adapters whose manifest says "counts_tokens".
	OpCountRequestEncode Op = 25
	// OpCountResponseDecode (2.7): payload = the body of the backend's
	// 200 answer to the request OpCountRequestEncode built. Output =
	// canonical token count JSON (canon.TokenCount: count, and
	// max_model_len when the engine reports the model's context window,
	// which the host then prefers to discovery's). StatusBadInput: the
	// answer holds no count (an older engine, a proxy); the host counts
	// offline. Non-200 answers never reach the adapter.
	OpCountResponseDecode Op = 26
)

// Fused ops: a translator and an adapter of the same module in one call.
// Both component indexes are in the header.
const (
	// OpFusedRequest: payload = client request body; meta MetaRoute,
	// MetaKind, and MetaContextLength when known. The translator decodes,
	// the adapter encodes. Output = backend request body; output meta as
	// OpRequestDecode's (MetaModel, MetaStream, MetaIncludeUsage,
	// MetaMaxTokens) plus OpRequestEncode's (MetaMethod, MetaPath,
	// MetaContentType). A status of StatusBadInput is the client's error.
	OpFusedRequest Op = 32
	// OpFusedResponse: payload = backend response body; meta as
	// OpResponseEncode's. Output = client response body; output meta as
	// OpResponseDecode's (usage, finish reason) plus MetaContentType when
	// the translator sets one. StatusBadInput: the backend's bytes are bad.
	OpFusedResponse Op = 33
	// OpFusedStream: payload = list of framed backend events; meta as
	// OpStreamEncode's; FlagFirst/FlagEnd as for the unfused ops. The state
	// blob holds both components' states (its layout is the SDK's).
	// Output = client stream bytes; ResultStreamDone when the backend
	// signalled the end; output meta as OpStreamDecode's.
	OpFusedStream Op = 34
)

// String names the op for logs and metrics.
func (o Op) String() string {
	switch o {
	case OpRequestDecode:
		return "request_decode"
	case OpResponseEncode:
		return "response_encode"
	case OpStreamEncode:
		return "stream_encode"
	case OpErrorEncode:
		return "error_encode"
	case OpModelsEncode:
		return "models_encode"
	case OpEmbedRequestDecode:
		return "embed_request_decode"
	case OpEmbedResponseEncode:
		return "embed_response_encode"
	case OpEmbedRequestEncode:
		return "embed_request_encode"
	case OpEmbedResponseDecode:
		return "embed_response_decode"
	case OpTokensEncode:
		return "tokens_encode"
	case OpRerankRequestDecode:
		return "rerank_request_decode"
	case OpRerankResponseEncode:
		return "rerank_response_encode"
	case OpRerankRequestEncode:
		return "rerank_request_encode"
	case OpRerankResponseDecode:
		return "rerank_response_decode"
	case OpCountRequestEncode:
		return "count_request_encode"
	case OpCountResponseDecode:
		return "count_response_decode"
	case OpRequestEncode:
		return "request_encode"
	case OpResponseDecode:
		return "response_decode"
	case OpStreamDecode:
		return "stream_decode"
	case OpErrorDecode:
		return "error_decode"
	case OpProbeDecode:
		return "probe_decode"
	case OpFusedRequest:
		return "fused_request"
	case OpFusedResponse:
		return "fused_response"
	case OpFusedStream:
		return "fused_stream"
	}
	return "unknown"
}

// Status is the first word of a result.
type Status uint32

// Result statuses. Anything >= StatusBadInput carries an error message.
const (
	StatusOK            Status = 0
	StatusNoOutput      Status = 1
	StatusBadInput      Status = 2 // the client's or backend's bytes are invalid
	StatusUnsupported   Status = 3 // op not implemented by this plugin
	StatusPluginError   Status = 4 // the plugin failed (a recovered panic, a bug)
	StatusStateTooLarge Status = 5
)

// String names the status.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusNoOutput:
		return "no_output"
	case StatusBadInput:
		return "bad_input"
	case StatusUnsupported:
		return "unsupported"
	case StatusPluginError:
		return "plugin_error"
	case StatusStateTooLarge:
		return "state_too_large"
	case StatusNeedImages:
		return "need_images"
	}
	return "unknown"
}

// Call flags (header) and result flags.
const (
	FlagFirst = 1 << 0 // first call of a stream
	FlagEnd   = 1 << 1 // last call of a stream: flush the trailer

	// ResultStateKeep in a result keeps the state blob the host passed in.
	ResultStateKeep = 1 << 0
	// ResultStreamDone reports that the stream ended on the protocol level
	// (e.g. the backend sent [DONE] or done:true).
	ResultStreamDone = 1 << 1
)

// Header is the decoded call header.
type Header struct {
	Flags      uint32
	StateLen   uint32
	MetaLen    uint32
	PayloadLen uint32
	Translator uint16 // component index of the translator
	Adapter    uint16 // component index of the adapter
	RequestID  uint64
}

// PutHeader writes h at the start of b, which must hold HeaderSize bytes.
func PutHeader(b []byte, h Header) {
	_ = b[HeaderSize-1]
	binary.LittleEndian.PutUint32(b[0:], HeaderSize)
	binary.LittleEndian.PutUint32(b[4:], h.Flags)
	binary.LittleEndian.PutUint32(b[8:], h.StateLen)
	binary.LittleEndian.PutUint32(b[12:], h.MetaLen)
	binary.LittleEndian.PutUint32(b[16:], h.PayloadLen)
	binary.LittleEndian.PutUint16(b[20:], h.Translator)
	binary.LittleEndian.PutUint16(b[22:], h.Adapter)
	binary.LittleEndian.PutUint64(b[24:], h.RequestID)
}

// Errors returned by the parsers.
var (
	ErrShort  = errors.New("abi: buffer shorter than its header says")
	ErrHeader = errors.New("abi: unsupported header size")
)

// ParseCall splits a call buffer into its header and sections. The returned
// slices alias in.
func ParseCall(in []byte) (h Header, state, meta, payload []byte, err error) {
	if len(in) < HeaderSize {
		return h, nil, nil, nil, ErrShort
	}
	hs := binary.LittleEndian.Uint32(in[0:])
	if hs < HeaderSize || uint64(hs) > uint64(len(in)) {
		return h, nil, nil, nil, ErrHeader
	}
	h.Flags = binary.LittleEndian.Uint32(in[4:])
	h.StateLen = binary.LittleEndian.Uint32(in[8:])
	h.MetaLen = binary.LittleEndian.Uint32(in[12:])
	h.PayloadLen = binary.LittleEndian.Uint32(in[16:])
	h.Translator = binary.LittleEndian.Uint16(in[20:])
	h.Adapter = binary.LittleEndian.Uint16(in[22:])
	h.RequestID = binary.LittleEndian.Uint64(in[24:])
	total := uint64(hs) + uint64(h.StateLen) + uint64(h.MetaLen) + uint64(h.PayloadLen)
	if total > uint64(len(in)) {
		return h, nil, nil, nil, ErrShort
	}
	p := int(hs)
	state = in[p : p+int(h.StateLen)]
	p += int(h.StateLen)
	meta = in[p : p+int(h.MetaLen)]
	p += int(h.MetaLen)
	payload = in[p : p+int(h.PayloadLen)]
	return h, state, meta, payload, nil
}

// Result is a decoded result area. Its slices alias the area.
type Result struct {
	Status  Status
	Flags   uint32
	State   []byte
	Meta    []byte
	Payload []byte
	Error   []byte
}

// ParseResult decodes a result area, checking every length against b.
func ParseResult(b []byte) (r Result, err error) {
	if len(b) < ResultHeaderSize {
		return r, ErrShort
	}
	r.Status = Status(binary.LittleEndian.Uint32(b[0:]))
	r.Flags = binary.LittleEndian.Uint32(b[4:])
	sl := uint64(binary.LittleEndian.Uint32(b[8:]))
	ml := uint64(binary.LittleEndian.Uint32(b[12:]))
	pl := uint64(binary.LittleEndian.Uint32(b[16:]))
	el := uint64(binary.LittleEndian.Uint32(b[20:]))
	if ResultHeaderSize+sl+ml+pl+el > uint64(len(b)) {
		return r, ErrShort
	}
	p := uint64(ResultHeaderSize)
	r.State = b[p : p+sl]
	p += sl
	r.Meta = b[p : p+ml]
	p += ml
	r.Payload = b[p : p+pl]
	p += pl
	r.Error = b[p : p+el]
	return r, nil
}

// PutResultHeader writes a result header at the start of b (ResultHeaderSize bytes).
func PutResultHeader(b []byte, st Status, flags uint32, stateLen, metaLen, payloadLen, errLen int) {
	_ = b[ResultHeaderSize-1]
	binary.LittleEndian.PutUint32(b[0:], uint32(st))
	binary.LittleEndian.PutUint32(b[4:], flags)
	binary.LittleEndian.PutUint32(b[8:], uint32(stateLen))
	binary.LittleEndian.PutUint32(b[12:], uint32(metaLen))
	binary.LittleEndian.PutUint32(b[16:], uint32(payloadLen))
	binary.LittleEndian.PutUint32(b[20:], uint32(errLen))
}

// Pack packs a guest address and length into an export's i64 result.
func Pack(ptr, n uint32) uint64 { return uint64(ptr)<<32 | uint64(n) }

// Unpack is the inverse of Pack.
func Unpack(v uint64) (ptr, n uint32) { return uint32(v >> 32), uint32(v) }

// Meta keys. Metadata is a list of pairs, each u32 key length, key, u32
// value length, value: any byte may appear in a value (v1's NUL
// separators let a NUL in a client's model name forge pairs). Which op
// reads or writes which key is documented on the ops.
const (
	MetaRoute        = "route"         // in, translator ops: route name from the manifest
	MetaKind         = "kind"          // in, translator ops: the route's endpoint kind
	MetaModel        = "model"         // out, request_decode; in, response/stream encode
	MetaStream       = "stream"        // out, request_decode ("1"/"0"); in, error_encode ("1": an open stream)
	MetaIncludeUsage = "include_usage" // out, request_decode; in, stream_encode ("1"/"0")
	MetaMaxTokens    = "max_tokens"    // out, request_decode: the requested output cap (decimal), absent when unset
	// MetaChoices: out, request_decode: how many sequences the request
	// generates (decimal: choices per prompt times prompts), absent when
	// one. The host multiplies the output it reserves from a token budget
	// by it (and divides the output cap it grants, abi.MetaMaxOutput,
	// which applies to each choice); routed requests give it in
	// sdk.Routing.Choices. A plugin that omits it is counted as one.
	MetaChoices       = "choices"
	MetaID            = "id"             // in, response/stream encode: the gateway's request id
	MetaCreated       = "created"        // in, response/stream encode: unix seconds
	MetaStatus        = "status"         // in, error/probe decode: backend HTTP status; out, error_encode: HTTP status
	MetaContentType   = "content-type"   // out, request_encode and encode ops
	MetaPath          = "path"           // out, request_encode: backend path
	MetaMethod        = "method"         // out, request_encode: backend method
	MetaProbe         = "probe"          // in, probe_decode: probe name
	MetaContextLength = "context_length" // in, request_encode: the model's context window on the chosen backend (decimal), when known
	// MetaMaxOutput (2.3): in, request_encode and the fused request op:
	// the most output tokens the gateway allows this request (decimal;
	// the user's remaining token budget), when it caps them. The SDK
	// lowers ChatRequest.MaxTokens to it (setting it when the client
	// named none) before the adapter encodes.
	MetaMaxOutput = "max_output"
	// MetaModelCaps (2.4): in, request_encode and the fused request op:
	// the model's canonical capabilities on the chosen backend
	// (comma-separated canon.Cap* names), sent only when discovery knows
	// them. The SDK answers bad_input before the adapter encodes when the
	// request has an image and they lack "vision", or tools and they lack
	// "tools".
	MetaModelCaps = "model_caps"
	// MetaThinkDefault (2.8, additive): in, request_encode, the fused
	// request op and count_request_encode: what thinking a request gets
	// when it does not say (canon.ThinkUnset), by the operator's
	// per-model setting: "off" or "on"; absent, the model's own default
	// (nothing is sent). The SDK applies it (sdk.ThinkDefault) before the
	// adapter encodes: "off" becomes canon.ThinkOff and "on" canon.ThinkOn,
	// except for a model whose known capabilities (MetaModelCaps) lack
	// "thinking": nothing to turn off, and nothing to turn on that the
	// backend would not refuse.
	MetaThinkDefault     = "think_default"
	MetaPromptTokens     = "prompt_tokens" // out, response/stream decode
	MetaCompletionTokens = "completion_tokens"
	MetaReasoningTokens  = "reasoning_tokens"
	MetaCachedTokens     = "cached_tokens"
	MetaFinishReason     = "finish_reason" // out, response/stream decode: canonical finish reason
	// MetaOutputTokens: out, response/stream decode and the fused
	// response and stream ops: an estimate of the output tokens in the
	// call's choices (decimal, absent when none), which the host sums and
	// charges when a stream ends without usage (the client hung up, the
	// backend dropped, a plugin failed). Engines stream about one token
	// per delta, so each choice delta with text counts one, plus one per 4
	// bytes of text beyond the first 12 (a delta holding several tokens);
	// sdk.OutputTokens computes it.
	MetaOutputTokens = "output_tokens"
	// MetaStreamShape (out, fused stream, ABI 2.10): the shape of the
	// events that follow, as sdk/shape encodes it. Each result of a
	// fused stream call replaces the host's shape, or drops it when it
	// has none.
	MetaStreamShape = "stream_shape"
	// MetaResponseShape (out, fused response, ABI 2.11): the shape of
	// the answers that follow, as sdk/shape's AppendResponse encodes it.
	// The host keeps it for the call's metadata but MetaID and
	// MetaCreated, until a call under the same metadata replaces it.
	MetaResponseShape = "response_shape"
	// MetaEncodingFormat (2.2): out, embed_request_decode; in,
	// embed_response_encode: the client's vector encoding as the
	// translator names it in canon.EmbeddingRequest.EncodingFormat
	// ("float", "base64"); absent when the client chose none.
	MetaEncodingFormat = "encoding_format"
	// NoDocuments is MetaEncodingFormat's value on a rerank request whose
	// client asked for results without their documents (2.2): the host
	// passes it to rerank_response_encode as it passes an encoding.
	NoDocuments = "no_documents"
	// MetaQuery (2.8): in, every translator op of a route declaring a
	// template, a selector or credentials: the request's raw query string
	// (without "?"), the route's credential parameters removed.
	MetaQuery = "query"
	// MetaCapturePrefix (2.8): in, every translator op of a template
	// route: one pair per capture, key MetaCapturePrefix+NAME
	// ("path.model"), value the captured text as the path carried it
	// (after the host's percent-decoding).
	MetaCapturePrefix = "path."
	// MetaEcho (2.9): out, request_decode and the fused request op: a
	// note the translator leaves itself (opaque to the host, at most
	// MaxEchoBytes); in, response_encode, stream_encode, error_encode and
	// the fused response and stream ops of the same request, as it was
	// written. Absent when the translator wrote none.
	MetaEcho = "echo"
	// MetaDroppedTools (2.9): out, request_decode and the fused request
	// op: the client's tools the translator did not offer the model (a
	// hosted tool no backend runs), comma-separated names; the host sets
	// them as the answer's X-MindRouter-Dropped-Tools header.
	MetaDroppedTools = "dropped_tools"
	// MetaKeptPrefix (2.9): in, every translator op of a responses-kind
	// route whose state the host keeps: one pair per state field its
	// keeper consumed from the body (MetaKeptPrefix+"previous_response_id",
	// MetaKeptPrefix+"conversation": the id the client sent), so the
	// answer can repeat them.
	MetaKeptPrefix = "kept."
)

// MaxEchoBytes bounds MetaEcho: a longer note is not passed back (the
// translator answers as without one).
const MaxEchoBytes = 256 << 10

// AppendMeta appends one key/value pair.
func AppendMeta(dst []byte, key, value string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(key)))
	dst = append(dst, key...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(value)))
	return append(dst, value...)
}

// AppendMetaBytes is AppendMeta with a byte-slice value.
func AppendMetaBytes(dst []byte, key string, value []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(key)))
	dst = append(dst, key...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(value)))
	return append(dst, value...)
}

// MetaGet returns the value of key in a metadata list; ok is false when the
// key is absent or the list is malformed. It does not allocate.
func MetaGet(meta []byte, key string) (value []byte, ok bool) {
	for len(meta) > 0 {
		k, v, rest, err := NextMeta(meta)
		if err != nil {
			return nil, false
		}
		if string(k) == key {
			return v, true
		}
		meta = rest
	}
	return nil, false
}

// NextMeta splits the first pair off a metadata list.
func NextMeta(meta []byte) (key, value, rest []byte, err error) {
	key, rest, ok := cutLen(meta)
	if !ok {
		return nil, nil, nil, ErrShort
	}
	value, rest, ok = cutLen(rest)
	if !ok {
		return nil, nil, nil, ErrShort
	}
	return key, value, rest, nil
}

// ValidMeta reports whether meta is a well-formed metadata list.
func ValidMeta(meta []byte) bool {
	for len(meta) > 0 {
		_, _, rest, err := NextMeta(meta)
		if err != nil {
			return false
		}
		meta = rest
	}
	return true
}

func cutLen(b []byte) (field, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	if 4+n > uint64(len(b)) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}

// AppendItem appends one u32-length-prefixed item to a list payload.
func AppendItem(dst, item []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(item)))
	return append(dst, item...)
}

// NextItem splits the first item off a list payload. ok is false at the end
// or when the list is malformed (err then reports it).
func NextItem(list []byte) (item, rest []byte, ok bool, err error) {
	if len(list) == 0 {
		return nil, nil, false, nil
	}
	if len(list) < 4 {
		return nil, nil, false, ErrShort
	}
	n := uint64(binary.LittleEndian.Uint32(list))
	if 4+n > uint64(len(list)) {
		return nil, nil, false, ErrShort
	}
	return list[4 : 4+n], list[4+n:], true, nil
}
