// Package sdk is what a MindRouter plugin author imports.
//
// A plugin is either a Translator (a client API format ⇄ the canonical
// schema in package canon) or an Adapter (the canonical schema ⇄ a backend's
// wire format, plus parsing of the backend's discovery and health probes).
// Write the plugin as an ordinary Go package, then add a main package that
// registers it:
//
//	package main
//
//	import ("github.com/mindrouter/mindrouter/sdk"; "example.com/myplugin")
//
//	func init() { sdk.RegisterTranslator(myplugin.Manifest(), myplugin.New()) }
//	func main() {}
//
// and build it with the standard toolchain:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o myplugin.wasm ./cmd/wasm
//
// The SDK owns the WebAssembly exports, the ABI (package abi) and the
// canonical JSON codec; plugin code sees typed values only. The same plugin
// package compiles natively, so its unit tests run under go test -race, and
// sdk.NewTranslator / sdk.NewAdapter give a native Plugin that the gateway's
// conformance kit and benchmarks drive exactly as they drive the .wasm
// (sdk.NewBundle for a bundle, below).
//
// Plugins are stateless functions: any pooled instance may serve any call,
// and per-stream state lives in a blob the host owns (State). Use
// reflection-free JSON (package jsonw to write, github.com/valyala/fastjson
// to read): encoding/json runs about ten times slower inside WebAssembly.
//
// # Bundles
//
// A module may serve several components, translators and adapters, each
// with its own manifest: a bundle. Register the parts, in the order that
// gives their component indexes, instead of one plugin:
//
//	func init() {
//		sdk.RegisterBundle("mybundle", "1.0.0",
//			sdk.TranslatorPart(mydialect.Manifest(), mydialect.New()), // index 0
//			sdk.AdapterPart(myengine.Manifest(), myengine.New()),      // index 1
//		)
//	}
//
// (natively, sdk.NewBundle returns the same Plugin). The bundle answers
// mr_init with a manifest of Kind KindBundle whose Components are the
// parts' manifests in index order, each with its Kind and the ABI, SDK and
// Go versions filled. Every call names its components in the header
// (abi.Header.Translator, abi.Header.Adapter): a translator op goes to the
// translator index, an adapter op to the adapter index, and an index out of
// range or naming a component of the other kind gets StatusUnsupported
// with a message saying which. A module registered with RegisterTranslator
// or RegisterAdapter is a module of one component, index 0, whose manifest
// is that component's. A bundle's config (plugins.yaml `config`) is handed
// whole to every component implementing Configurable, in index order; the
// first error fails Init and names the component.
//
// # Fused ops
//
// When a request's translator and adapter are in the same bundle, the host
// makes one call per direction (abi.OpFusedRequest, abi.OpFusedResponse,
// abi.OpFusedStream) instead of two, and the canonical value passes from
// one component to the other as Go values, never as JSON. Components need
// no code for this; the SDK guarantees that a fused op gives exactly what
// the two unfused calls give, driven as the gateway drives them: the same
// status and error, the same bytes, and as meta the union of both calls'
// meta (request: request_decode's model, stream, include_usage,
// max_tokens and request_encode's method, path, content type; response and
// stream: the usage and finish reason of the decode and what the encode
// sets). Each half sees the Call the unfused op would get: its Op is the
// unfused op's (abi.OpRequestDecode, then abi.OpRequestEncode, and so on),
// the translator gets the call's meta (without abi.MetaContextLength), the
// adapter only abi.MetaContextLength on a request and no meta otherwise,
// and ChatRequest.ContextLength is set from that meta as request_encode
// sets it.
//
// A fused stream call runs DecodeStream on the batch with the call's flags,
// then EncodeStream only when the batch gave chunks or the call has
// FlagEnd, as the gateway's relay does; the translator gets FlagFirst on
// its own first call, which may come after the adapter's. Each component
// keeps its own State (kept unless it calls Set); the host holds one blob
// with both, in this layout:
//
//	byte     version (1)
//	byte     flags: 1 once the translator has been called
//	uvarint  length of the adapter's blob
//	[]byte   the adapter's blob
//	[]byte   the translator's blob (the rest of the blob)
//
// An empty blob starts a stream; the result keeps the host's blob
// (abi.ResultStateKeep) when neither component Set its state and the flag
// did not change. abi.ResultStreamDone reports that the adapter called
// Done.
//
// # Same-dialect patches
//
// When a translator's client dialect and an adapter's backend wire format
// are the same (an OpenAI client and vLLM's OpenAI-compatible server), the
// decode → canonical → encode round trip mostly copies bytes. A bundle may
// then give the pair a Patch, attached to the translator part:
//
//	sdk.TranslatorPart(openai.Manifest(), openai.New()).Patch("vllm", patch)
//
// A pair whose backend format is close to the client's can have one too,
// declining the ops it does not cover (the first-party bundle's openai ×
// ollama patch rewrites Ollama's responses and stream lines and declines
// every request).
//
// NewBundle resolves the adapter's name to its index (and panics when no
// adapter has it). On a fused op naming that translator and that adapter,
// the dispatcher first offers the call to the patch (PatchRequest,
// PatchResponse, PatchStream), which rewrites the client's or backend's
// JSON in one pass: fields passed through, only what differs rewritten,
// backend-only fields dropped. The patch either handles the call or
// declines; a declined call runs through the two components as above, and
// nothing the patch wrote survives. A patch must give exactly what the
// components give (the same bytes, meta, state blobs and result flags, so
// the guarantee of the fused ops holds whichever path ran, call by call
// within a stream) and must decline whatever it is not sure of: any input
// the components would refuse, and any shape it does not know. The SDK
// writes the meta a patch reports (request_decode's routing fields from
// the ChatRequest it fills, the usage and finish reason of a PatchReport)
// as it writes the components', and keeps the fused stream state layout:
// a stream patch sees and sets each component's blob (PatchStream). Ops
// other than the fused ones, and other pairs, never see the patch.
package sdk

import (
	"errors"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Version is the SDK version reported in manifests.
const Version = "0.1.0"

// Kind is the plugin kind.
type Kind string

// Plugin kinds.
const (
	KindTranslator Kind = "translator"
	KindAdapter    Kind = "adapter"
	// KindBundle is a module serving several components (translators and
	// adapters); its manifest lists them in Components.
	KindBundle Kind = "bundle"
)

// Framing is how a backend frames a streamed response; the host splits the
// stream into events before handing them to the adapter.
type Framing string

// Stream framings.
const (
	FramingSSE    Framing = "sse"    // text/event-stream; events are data payloads
	FramingNDJSON Framing = "ndjson" // one JSON value per line
)

// Endpoint is the kind of work a route does. The host's request pipeline
// is the same for every kind; the kind says which ops a request of the
// route calls (see the package doc of abi) and which adapter capability it
// needs. A route's Name is free; its Kind is one of these.
type Endpoint string

// Endpoint kinds. Chat, models, embedding (ABI 2.2), tokenize (2.2) and
// responses (2.5) are served; the others are reserved names for the ops
// that later SDK minor versions add (a plugin declaring one the host does
// not serve gets 404 for that route). A legacy text completion is a chat
// route whose DecodeRequest fills canon.ChatRequest.Prompt (OpenAI
// /v1/completions, Ollama's raw generate).
const (
	EndpointChat       Endpoint = "chat"       // request_decode, request_encode, response/stream decode+encode, error ops
	EndpointCompletion Endpoint = "completion" // reserved: completions are chat routes with a Prompt
	EndpointEmbedding  Endpoint = "embedding"  // embed ops (EmbeddingTranslator, EmbeddingAdapter)
	EndpointRerank     Endpoint = "rerank"     // reserved
	EndpointScore      Endpoint = "score"      // reserved
	EndpointTokenize   Endpoint = "tokenize"   // request_decode, tokens_encode (TokenCountTranslator); no backend call
	EndpointModels     Endpoint = "models"     // models_encode only; no backend call (a body only on one-model routes)
	// EndpointResponses (ABI 2.5): OpenAI's Responses API. A route of this
	// kind runs the chat ops (DecodeRequest, EncodeResponse, EncodeStream,
	// EncodeError); the host keeps the state (previous_response_id,
	// conversation) and splices the stored history into `input` before
	// DecodeRequest, and names the response after its request id
	// ("chatcmpl-<hex>" → "resp_<hex>"; see plugins/responses).
	EndpointResponses Endpoint = "responses"
)

// Route is an HTTP route a translator serves.
type Route struct {
	Name string `json:"name"` // passed to the plugin as meta "route"
	// Kind is the endpoint kind; empty means the Name (ABI v1 manifests
	// named routes "chat" and "models").
	Kind              Endpoint `json:"kind,omitempty"`
	Method            string   `json:"method"` // GET, POST
	Path              string   `json:"path"`
	StreamContentType string   `json:"stream_content_type,omitempty"`
	// Routing says where the routing fields live in the route's JSON body,
	// so the host can read them natively before any plugin call.
	Routing *Routing `json:"routing,omitempty"`
	// Select (ABI 2.8) makes the route serve only requests that show one
	// of these: "header:NAME" (the header is present), "query:NAME" (the
	// parameter is present) or "query:NAME=VALUE". Of the routes of one
	// method and path, one whose Select holds is chosen over one without
	// Select; so Gemini's GET /v1/models (Select
	// ["header:x-goog-api-key", "query:key"]) shares OpenAI's path.
	Select []string `json:"select,omitempty"`
	// Credentials (ABI 2.8) are where, besides Authorization and
	// X-API-Key, the route's clients send their key: "header:NAME" or
	// "query:NAME". The host reads and checks the key there before the
	// body, refuses a request carrying two different keys, and removes
	// the key from logs, audit rows, errors and MetaQuery.
	Credentials []string `json:"credentials,omitempty"`
	// Public marks a models route that answers without a key, for the
	// connectivity probes clients send before they have one (Ollama's
	// GET / and /api/version). The host gives it an empty model list, so
	// its answer names nothing. On a route of another kind, or one about
	// one model, it is ignored (a key is asked for), as by a host that
	// predates the field.
	Public bool `json:"public,omitempty"`
}

// Places of a routing field, a selector or a credential outside the body
// (ABI 2.8): "path:NAME" (a capture of the route's template),
// "query:NAME", "header:NAME".
const (
	FromPath   = "path:"
	FromQuery  = "query:"
	FromHeader = "header:"
)

// EndpointKind returns Kind, or Name for a route that declares none.
func (r Route) EndpointKind() Endpoint {
	if r.Kind != "" {
		return r.Kind
	}
	return Endpoint(r.Name)
}

// Routing locates a route's routing fields in its JSON request body as
// dotted object-key paths from the top-level object ("model",
// "stream_options.include_usage"). An empty path means the dialect has no
// such field. Since ABI 2.8 Model may instead name a capture of the
// route's template, a query parameter or a header ("path:model",
// "query:model", "header:NAME"; see FromPath): the host takes the model
// from there, and reads the body, when the route has one, for the other
// fields.
//
// Vision, Tools and Structured (ABI 2.6) say where a request shows that it
// needs image input, tool calling or JSON output from its model, so the
// host routes it only to backends whose model offers that (discovery's
// capabilities), in the same native pass. Each is a list of markers, any
// of which holding means the need:
//
//	PATH          the value at the dotted path is non-empty: not null, false, "", [] or {}
//	PATH=VALUE    the value at the dotted path is the JSON string VALUE
//	*.KEY         a member KEY at any depth (inside arrays too) is non-empty
//	*.KEY=VALUE   a member KEY at any depth is the string VALUE
//
// For example OpenAI chat declares Vision ["*.type=image_url"], Tools
// ["tools"] and Structured ["response_format.type=json_object",
// "response_format.type=json_schema"]. At most 16 markers in all; a route
// declaring none needs nothing (older plugins), and a need the markers
// miss is still checked by the plugin once a backend is chosen.
type Routing struct {
	Model        string   `json:"model,omitempty"`
	Stream       string   `json:"stream,omitempty"`
	StreamByDflt bool     `json:"stream_default,omitempty"` // stream when the field is absent (Ollama)
	IncludeUsage string   `json:"include_usage,omitempty"`
	MaxTokens    []string `json:"max_tokens,omitempty"` // the first present wins
	// Choices is the path of the number of choices asked for (OpenAI's
	// "n"): the host reserves and caps each choice's output from the
	// user's token budget, so n choices cost n times the output cap.
	Choices string `json:"choices,omitempty"`
	// Prompts is the path of a text completion's prompt (OpenAI's
	// "prompt"): when it is a list, each of its prompts gets Choices
	// choices, and the host reserves for all of them.
	Prompts    string   `json:"prompts,omitempty"`
	Vision     []string `json:"vision,omitempty"`     // image input (ABI 2.6)
	Tools      []string `json:"tools,omitempty"`      // tool definitions (ABI 2.6)
	Structured []string `json:"structured,omitempty"` // JSON object or schema output (ABI 2.6)
}

// Probe is a backend endpoint the gateway polls through an adapter.
type Probe struct {
	Name   string `json:"name"` // "models", "health", "loaded", "metrics", ...
	Method string `json:"method"`
	Path   string `json:"path"`
	// PerModel (ABI 2.4): the host runs this probe once per model the
	// other probes found (and again now and then), with meta "model" on
	// probe_decode; the Discovery returned describes that one model.
	PerModel bool `json:"per_model,omitempty"`
	// Body is the request body; the host replaces the exact token
	// {{model}} with the model's name as a JSON string (quotes included).
	Body string `json:"body,omitempty"`
}

// Manifest describes a plugin to the host. The SDK fills ABI, SDK and Go
// versions.
type Manifest struct {
	Name         string  `json:"name"`
	Version      string  `json:"version"`
	Kind         Kind    `json:"kind"`
	Format       string  `json:"format"` // translator: client dialect; adapter: backend engine
	Routes       []Route `json:"routes,omitempty"`
	Framing      Framing `json:"framing,omitempty"`
	Probes       []Probe `json:"probes,omitempty"`
	StateVersion int     `json:"state_version"`
	// CountsTokens (ABI 2.7, adapters): the adapter serves the count ops
	// (TokenCountAdapter), so the host asks it for the engine's own count
	// of a request near the context limit. The SDK sets it.
	CountsTokens bool `json:"counts_tokens,omitempty"`
	// Components are a bundle's component manifests, in index order (the
	// header's translator and adapter indexes point into this list).
	Components []Manifest `json:"components,omitempty"`
	ABI        uint32     `json:"abi"`
	SDKVersion string     `json:"sdk_version"`
	GoVersion  string     `json:"go_version"`
}

// Translator converts between a client's API format and the canonical schema.
// Implementations must be safe to call many times on one instance but need
// not be safe for concurrent use. Embed Unimplemented to leave ops out.
type Translator interface {
	// DecodeRequest parses a client request body (meta "route" names the
	// route) into req. Bad client input: return BadInput.
	DecodeRequest(c *Call, body []byte, req *canon.ChatRequest) error
	// EncodeResponse writes a complete response in the client's format.
	EncodeResponse(c *Call, resp *canon.ChatResponse, out *Output) error
	// EncodeStream writes the client bytes for a batch of chunks. On the last
	// call (c.End()) chunks may be empty: write the trailer.
	EncodeStream(c *Call, st *State, chunks []canon.ChatChunk, out *Output) error
	// EncodeError writes an error body in the client's dialect.
	EncodeError(c *Call, e *canon.Error, out *Output) error
	// EncodeModels writes the model list.
	EncodeModels(c *Call, list *canon.ModelList, out *Output) error
}

// Adapter converts between the canonical schema and a backend's wire format.
type Adapter interface {
	// EncodeRequest writes the backend request body and sets meta "path"
	// (and optionally "method", "content-type") on out.
	EncodeRequest(c *Call, req *canon.ChatRequest, out *Output) error
	// DecodeResponse parses a complete backend response.
	DecodeResponse(c *Call, body []byte, resp *canon.ChatResponse) error
	// DecodeStream turns a batch of framed backend events into canonical
	// chunks appended to *chunks. Call c.Done() when the backend signalled the
	// end of the stream. The SDK is done with the chunks when the call
	// returns, so their strings and slices may live in buffers the adapter
	// reuses on its next call.
	DecodeStream(c *Call, st *State, events [][]byte, chunks *[]canon.ChatChunk) error
	// DecodeError turns a backend error response into a canonical error.
	DecodeError(c *Call, status int, body []byte, e *canon.Error) error
	// DecodeProbe parses the response of the manifest probe named probe.
	DecodeProbe(c *Call, probe string, body []byte, d *canon.Discovery) error
}

// Configurable is implemented by plugins that take configuration: the JSON
// form of the plugin's `config` in plugins.yaml, given once per instance
// before any call. In a bundle every component implementing it gets the
// bundle's whole config, in component order.
type Configurable interface {
	Configure(config []byte) error
}

// ErrUnsupported is returned by ops a plugin does not implement.
var ErrUnsupported = errors.New("operation not supported by this plugin")

// InputError marks an error caused by the bytes the plugin was given (the
// client's request, the backend's response), as opposed to a plugin bug.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// BadInput returns an *InputError with msg.
func BadInput(msg string) error { return &InputError{Msg: msg} }

// Unimplemented answers every op with ErrUnsupported; embed it and override
// what the plugin supports.
type Unimplemented struct{}

// DecodeRequest implements Translator.
func (Unimplemented) DecodeRequest(*Call, []byte, *canon.ChatRequest) error { return ErrUnsupported }

// EncodeResponse implements Translator.
func (Unimplemented) EncodeResponse(*Call, *canon.ChatResponse, *Output) error {
	return ErrUnsupported
}

// EncodeStream implements Translator.
func (Unimplemented) EncodeStream(*Call, *State, []canon.ChatChunk, *Output) error {
	return ErrUnsupported
}

// EncodeError implements Translator.
func (Unimplemented) EncodeError(*Call, *canon.Error, *Output) error { return ErrUnsupported }

// EncodeModels implements Translator.
func (Unimplemented) EncodeModels(*Call, *canon.ModelList, *Output) error { return ErrUnsupported }

// EncodeRequest implements Adapter.
func (Unimplemented) EncodeRequest(*Call, *canon.ChatRequest, *Output) error { return ErrUnsupported }

// DecodeResponse implements Adapter.
func (Unimplemented) DecodeResponse(*Call, []byte, *canon.ChatResponse) error {
	return ErrUnsupported
}

// DecodeStream implements Adapter.
func (Unimplemented) DecodeStream(*Call, *State, [][]byte, *[]canon.ChatChunk) error {
	return ErrUnsupported
}

// DecodeError implements Adapter.
func (Unimplemented) DecodeError(*Call, int, []byte, *canon.Error) error { return ErrUnsupported }

// DecodeProbe implements Adapter.
func (Unimplemented) DecodeProbe(*Call, string, []byte, *canon.Discovery) error {
	return ErrUnsupported
}

// Call describes the unit of work being done. It is valid only during the
// call that received it.
type Call struct {
	Op        abi.Op
	Flags     uint32
	RequestID uint64
	meta      []byte
	done      bool
	plugin    *Plugin
	// Where the values of the ABI's meta keys are in meta, found on the
	// first lookup: a call's plugin code looks up a handful of keys,
	// several times each, and scanning the list each time costs more than
	// the lookup in WebAssembly.
	indexed bool
	slots   [nMetaSlots]metaSpan
}

// metaSpan is a value's range in a meta list; b == 0: absent.
type metaSpan struct{ a, b uint32 }

const nMetaSlots = 16

// metaSlot returns the index slot of an ABI meta key, or -1.
func metaSlot(key string) int {
	switch key {
	case abi.MetaRoute:
		return 0
	case abi.MetaKind:
		return 1
	case abi.MetaModel:
		return 2
	case abi.MetaStream:
		return 3
	case abi.MetaIncludeUsage:
		return 4
	case abi.MetaMaxTokens:
		return 5
	case abi.MetaID:
		return 6
	case abi.MetaCreated:
		return 7
	case abi.MetaStatus:
		return 8
	case abi.MetaProbe:
		return 9
	case abi.MetaContextLength:
		return 10
	case abi.MetaContentType:
		return 11
	case abi.MetaPath:
		return 12
	case abi.MetaMaxOutput:
		return 13
	case abi.MetaModelCaps:
		return 14
	case abi.MetaThinkDefault:
		return 15
	}
	return -1
}

// index fills c.slots: the first pair of each key, up to the end of the
// list or its first malformed pair (as abi.MetaGet finds them).
func (c *Call) index() {
	c.indexed = true
	c.slots = [nMetaSlots]metaSpan{}
	m := c.meta
	off := 0
	for off < len(m) {
		k, v, rest, err := abi.NextMeta(m[off:])
		if err != nil {
			return
		}
		next := len(m) - len(rest)
		if i := metaSlot(string(k)); i >= 0 && c.slots[i].b == 0 {
			b := uint32(next)
			c.slots[i] = metaSpan{b - uint32(len(v)), b}
		}
		off = next
	}
}

// First reports whether this is the first call of a stream.
func (c *Call) First() bool { return c.Flags&abi.FlagFirst != 0 }

// End reports whether this is the last call of a stream.
func (c *Call) End() bool { return c.Flags&abi.FlagEnd != 0 }

// Meta returns the host-supplied value for key ("" when absent).
func (c *Call) Meta(key string) string {
	v, _ := c.MetaBytes(key)
	return string(v)
}

// MetaBytes is Meta without the copy; the result aliases the input buffer.
func (c *Call) MetaBytes(key string) ([]byte, bool) {
	i := metaSlot(key)
	if i < 0 {
		return abi.MetaGet(c.meta, key)
	}
	if !c.indexed {
		c.index()
	}
	s := c.slots[i]
	if s.b == 0 {
		return nil, false
	}
	return c.meta[s.a:s.b:s.b], true
}

// Done records that the backend signalled the end of the stream.
func (c *Call) Done() { c.done = true }

// Log sends one line to the host's rate-limited plugin log (slog levels:
// -4 debug, 0 info, 4 warn, 8 error).
func (c *Call) Log(level int, msg string) { c.plugin.log(level, msg) }

// Output collects what an op writes: a body and response metadata.
type Output struct {
	Body []byte
	meta []byte
}

// SetMeta records one metadata pair for the host (abi.MetaPath,
// abi.MetaStatus, abi.MetaContentType, ...).
func (o *Output) SetMeta(key, value string) { o.meta = abi.AppendMeta(o.meta, key, value) }

// SetMetaBytes is SetMeta with a byte-slice value (a binary one:
// abi.MetaStreamShape), which it copies.
func (o *Output) SetMetaBytes(key string, value []byte) {
	o.meta = abi.AppendMetaBytes(o.meta, key, value)
}

// SetEcho leaves the translator a note for the answer to the request its
// DecodeRequest is reading (abi.MetaEcho, ABI 2.9): the response, stream
// and error encodes of that request find it with Echo. A host older
// than 2.9 drops it.
func (c *Call) SetEcho(b []byte) {
	if len(b) == 0 || len(b) > abi.MaxEchoBytes || c.plugin == nil {
		return
	}
	c.plugin.out.meta = abi.AppendMetaBytes(c.plugin.out.meta, abi.MetaEcho, b)
}

// Echo returns the note the request's DecodeRequest left with SetEcho
// (nil when none, or from a host older than 2.9).
func (c *Call) Echo() []byte {
	b, _ := c.MetaBytes(abi.MetaEcho)
	return b
}

// SetDroppedTools names, comma-separated, the client's tools that
// DecodeRequest did not offer the model (abi.MetaDroppedTools, ABI 2.9):
// the host tells the client in the X-MindRouter-Dropped-Tools header.
func (c *Call) SetDroppedTools(names string) {
	if names == "" || c.plugin == nil {
		return
	}
	c.plugin.out.meta = abi.AppendMeta(c.plugin.out.meta, abi.MetaDroppedTools, names)
}

// State is a stream's opaque state blob. In holds what the previous call of
// this stream stored (empty on the first call); Set replaces it. Unless Set
// is called the host keeps the previous blob.
type State struct {
	In  []byte
	out []byte
	set bool
}

// Set stores b (copied) as the stream's state for the next call.
func (s *State) Set(b []byte) { s.out = append(s.out[:0], b...); s.set = true }
