// Package responses is MindRouter's translator for OpenAI's Responses API
// (POST /v1/responses): typed input items become the canonical chat
// request, and canonical responses, stream chunks and errors become the
// Response object and the typed SSE events the official openai-python and
// openai-go SDKs (responses.Response, responses.ResponseStreamEventUnion)
// read.
//
// The translator is stateless like every plugin: previous_response_id and
// conversation are the host's business (its state keeper splices the
// stored history into input before DecodeRequest), and the Response ids
// are derived from the gateway's request id ("chatcmpl-<hex>" becomes
// "resp_<hex>"), which the keeper relies on to find what it stored.
//
// Tools: function tools pass as they are; a namespace (Codex's group of
// function tools) is flattened into "<namespace>__<name>" tools, and the
// model's calls of them are answered as function_call items with the
// namespace and name the client gave; hosted tools (web_search,
// file_search, code_interpreter, computer use, image_generation, mcp,
// local_shell, custom, ...) are not offered to the model, and the host
// names them in the X-MindRouter-Dropped-Tools header. The Response object
// repeats the request's fields (instructions, max_output_tokens, store,
// tools, tool_choice, reasoning, text, truncation, ...) from a note the
// request's decode leaves for its encodes (echo.go, ABI 2.9).
//
// Per-stream state (the sequence number and every output item's text so
// far, which the .done events and the terminal event repeat in full) lives
// in the host-owned state blob; see state.go for its size and cost.
package responses

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/plugins/openai"
	"github.com/mindrouter/mindrouter/sdk"
)

// Route names served by this translator (meta "route").
const (
	// RouteResponses is POST /v1/responses (endpoint kind responses: the
	// chat ops, with the host's state keeper around them).
	RouteResponses = "responses"
	// RouteInputTokens is POST /v1/responses/input_tokens (kind tokenize).
	RouteInputTokens = "input_tokens"
)

// Name is the translator's manifest name.
const Name = "openai-responses"

// Manifest describes the plugin to the host.
func Manifest() sdk.Manifest {
	return sdk.Manifest{
		Name:    Name,
		Version: "0.1.0",
		Kind:    sdk.KindTranslator,
		Format:  "openai",
		Routes: []sdk.Route{
			{Name: RouteResponses, Kind: sdk.EndpointResponses, Method: "POST", Path: "/v1/responses",
				StreamContentType: "text/event-stream", Routing: &sdk.Routing{
					Model: "model", Stream: "stream", MaxTokens: []string{"max_output_tokens"},
					// Tools are function tools (the decoder refuses others).
					Vision: []string{"*.type=input_image"}, Tools: []string{"tools"},
					Structured: []string{"text.format.type=json_object", "text.format.type=json_schema"},
				}},
			{Name: RouteInputTokens, Kind: sdk.EndpointTokenize, Method: "POST", Path: "/v1/responses/input_tokens",
				Routing: &sdk.Routing{Model: "model"}},
		},
		StateVersion: stateVersion,
	}
}

// Translator implements sdk.Translator and sdk.TokenCountTranslator for
// the Responses dialect. It is not safe for concurrent use; its scratch
// buffers carry no stream state from call to call.
type Translator struct {
	sdk.Unimplemented
	p    fastjson.Parser
	oa   *openai.Translator // the Chat Completions translator, for its error shape
	st   sdk.StateWriter    // scratch for the state blob and the echo note
	echo []byte             // scratch for the echo note's fragments
	ev   []byte             // scratch for one event's JSON
	// items and bufs are scratch for a stream call: the items decoded
	// from the state, and the buffers their texts grow in (nbuf in use).
	items []item
	bufs  [][]byte
	nbuf  int
}

// New returns a Translator.
func New() *Translator { return &Translator{oa: openai.New()} }

var (
	_ sdk.Translator           = (*Translator)(nil)
	_ sdk.TokenCountTranslator = (*Translator)(nil)
)
