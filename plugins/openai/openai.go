// Package openai is MindRouter's translator for the OpenAI Chat Completions
// API: it turns /v1/chat/completions requests into the canonical schema and
// canonical responses, stream chunks, errors and model lists back into the
// bytes the official openai-python and openai-go SDKs expect.
//
// One Translator value serves one call at a time (the SDK guarantees it);
// per-stream state lives in the host-owned state blob, never in the value.
// JSON is read with a reused fastjson.Parser and written with sdk/jsonw, so
// nothing on the hot path uses reflection.
package openai

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
)

// Route names served by this translator (meta "route").
const (
	RouteChat   = "chat"
	RouteModels = "models"
	// RouteTokenize counts a request's tokens (the reference's
	// /v1/tokenize): {model, messages[, tools]} or {model, prompt}.
	RouteTokenize = "tokenize"
)

// Manifest describes the plugin to the host.
func Manifest() sdk.Manifest {
	return sdk.Manifest{
		Name:    "openai",
		Version: "0.1.0",
		Kind:    sdk.KindTranslator,
		Format:  "openai",
		Routes: []sdk.Route{
			{Name: RouteChat, Kind: sdk.EndpointChat, Method: "POST", Path: "/v1/chat/completions",
				StreamContentType: "text/event-stream", Routing: &sdk.Routing{
					Model: "model", Stream: "stream", IncludeUsage: "stream_options.include_usage",
					MaxTokens: []string{"max_completion_tokens", "max_tokens"}, Choices: "n",
					// What the request needs from its model (ABI 2.6).
					Vision: []string{"*.type=image_url"}, Tools: []string{"tools", "functions"}, // functions: the legacy form
					Structured: []string{"response_format.type=json_object", "response_format.type=json_schema"},
				}},
			{Name: RouteCompletions, Kind: sdk.EndpointChat, Method: "POST", Path: "/v1/completions",
				StreamContentType: "text/event-stream", Routing: &sdk.Routing{
					Model: "model", Stream: "stream", IncludeUsage: "stream_options.include_usage",
					MaxTokens: []string{"max_tokens"}, Choices: "n", Prompts: "prompt",
				}},
			{Name: RouteModels, Kind: sdk.EndpointModels, Method: "GET", Path: "/v1/models"},
			{Name: RouteTokenize, Kind: sdk.EndpointTokenize, Method: "POST", Path: "/v1/tokenize",
				Routing: &sdk.Routing{Model: "model"}},
			{Name: RouteEmbeddings, Kind: sdk.EndpointEmbedding, Method: "POST", Path: "/v1/embeddings", Routing: &sdk.Routing{Model: "model"}},
			{Name: RouteRerank, Kind: sdk.EndpointRerank, Method: "POST", Path: "/v1/rerank", Routing: &sdk.Routing{Model: "model"}},
			{Name: RouteScore, Kind: sdk.EndpointScore, Method: "POST", Path: "/v1/score", Routing: &sdk.Routing{Model: "model"}},
		},
		StateVersion: stateVersion,
	}
}

// Translator implements sdk.Translator for the OpenAI Chat Completions
// dialect. It is not safe for concurrent use; the scratch buffers it holds
// are reused from call to call and carry no stream state.
type Translator struct {
	p   fastjson.Parser
	buf []byte          // scratch for one stream chunk's JSON
	hdr []byte          // scratch for a stream call's chunk opening
	st  sdk.StateWriter // scratch for the state blob
}

// New returns a Translator.
func New() *Translator { return &Translator{} }

var _ sdk.Translator = (*Translator)(nil)
