// Package ollamaapi is MindRouter's translator for Ollama's native API as
// clients call it (/api/chat, /api/generate, /api/tags, /api/ps,
// /api/show, /api/version, /api/embed, /api/embeddings): Ollama requests
// into the canonical schema, and canonical responses, NDJSON stream
// chunks, errors and model lists back into Ollama's shapes. (The adapter
// that speaks to Ollama backends is package ollama.)
//
// One Translator value serves one call at a time (the SDK guarantees it);
// per-stream state lives in the host-owned state blob, never in the value.
package ollamaapi

import (
	"github.com/mindrouter/mindrouter/sdk"
)

// Route names served by this translator (meta "route").
const (
	RouteChat     = "chat"
	RouteGenerate = "generate"
	RouteTags     = "tags"
	RoutePS       = "ps"
	RouteShow     = "show"
	RouteVersion  = "version"
)

const stateVersion = 1

// Manifest describes the plugin to the host.
func Manifest() sdk.Manifest {
	routing := &sdk.Routing{Model: "model", Stream: "stream", StreamByDflt: true,
		MaxTokens: []string{"options.num_predict"}}
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
			{Name: RouteVersion, Kind: sdk.EndpointModels, Method: "GET", Path: "/api/version"},
			{Name: RouteShow, Kind: sdk.EndpointModels, Method: "POST", Path: "/api/show",
				Routing: &sdk.Routing{Model: "model"}},
		},
		StateVersion: stateVersion,
	}
}

// Translator implements sdk.Translator for Ollama's native client API.
// It is not safe for concurrent use.
type Translator struct {
	sdk.Unimplemented
}

// New returns a Translator.
func New() *Translator { return &Translator{} }

var _ sdk.Translator = (*Translator)(nil)
