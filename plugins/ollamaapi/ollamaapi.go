// Package ollamaapi is MindRouter's translator for Ollama's native API as
// clients call it (/api/chat, /api/generate, /api/tags, /api/ps,
// /api/show, /api/version, /api/embed, /api/embeddings): Ollama requests
// into the canonical schema, and canonical responses, NDJSON stream
// chunks, errors and model lists back into Ollama's shapes, as defined by
// api/types.go in ollama/ollama and https://github.com/ollama/ollama/blob/main/docs/api.md.
// (The adapter that speaks to Ollama backends is package ollama.)
//
// One Translator value serves one call at a time (the SDK guarantees it);
// per-stream state lives in the host-owned state blob, never in the value.
// JSON is read with a reused fastjson.Parser and written with sdk/jsonw.
package ollamaapi

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
)

// Route names served by this translator (meta "route").
const (
	RouteChat       = "chat"
	RouteGenerate   = "generate"
	RouteTags       = "tags"
	RoutePS         = "ps"
	RouteShow       = "show"
	RouteVersion    = "version"
	RouteRoot       = "root" // GET /: "Ollama is running"
	RouteEmbed      = "embed"
	RouteEmbeddings = "embeddings"
)

// Manifest describes the plugin to the host.
func Manifest() sdk.Manifest {
	// Images are a message's (chat) or the request's (generate) "images";
	// "format" is "json" or a JSON schema.
	routing := &sdk.Routing{Model: "model", Stream: "stream", StreamByDflt: true,
		MaxTokens: []string{"options.num_predict"},
		Vision:    []string{"*.images"}, Tools: []string{"tools"}, Structured: []string{"format"}}
	one := &sdk.Routing{Model: "model"}
	return sdk.Manifest{
		Name:    "ollama-api",
		Version: "0.1.0",
		Kind:    sdk.KindTranslator,
		Format:  "ollama",
		Routes: []sdk.Route{
			{Name: RouteChat, Kind: sdk.EndpointChat, Method: "POST", Path: "/api/chat",
				StreamContentType: "application/x-ndjson", Routing: routing},
			{Name: RouteGenerate, Kind: sdk.EndpointChat, Method: "POST", Path: "/api/generate",
				StreamContentType: "application/x-ndjson", Routing: routing},
			{Name: RouteTags, Kind: sdk.EndpointModels, Method: "GET", Path: "/api/tags"},
			{Name: RoutePS, Kind: sdk.EndpointModels, Method: "GET", Path: "/api/ps"},
			// Clients probe these two before anything else, without a key
			// (real Ollama has none): Public, and they name no model.
			{Name: RouteVersion, Kind: sdk.EndpointModels, Method: "GET", Path: "/api/version", Public: true},
			{Name: RouteRoot, Kind: sdk.EndpointModels, Method: "GET", Path: "/", Public: true},
			{Name: RouteShow, Kind: sdk.EndpointModels, Method: "POST", Path: "/api/show", Routing: one},
			{Name: RouteEmbed, Kind: sdk.EndpointEmbedding, Method: "POST", Path: "/api/embed", Routing: one},
			{Name: RouteEmbeddings, Kind: sdk.EndpointEmbedding, Method: "POST", Path: "/api/embeddings", Routing: one},
		},
		StateVersion: stateVersion,
	}
}

// Translator implements sdk.Translator and sdk.EmbeddingTranslator for
// Ollama's native client API. It is not safe for concurrent use; the
// scratch buffers it holds are reused from call to call and carry no
// stream state.
type Translator struct {
	p   fastjson.Parser // requests; tool-call arguments when encoding
	buf []byte          // scratch for one NDJSON line
	st  sdk.StateWriter // scratch for the state blob
}

// New returns a Translator.
func New() *Translator { return &Translator{} }

var (
	_ sdk.Translator          = (*Translator)(nil)
	_ sdk.EmbeddingTranslator = (*Translator)(nil)
)
