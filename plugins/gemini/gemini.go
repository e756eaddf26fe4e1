// Package gemini translates Google's Gemini API (generativelanguage,
// "v1beta" and "v1") to and from the gateway's canonical schema: a
// client-side dialect, built as its own Go module on the plugin SDK alone,
// as a third-party plugin would be. docs/gemini.md lists what is served,
// dropped and approximated.
//
//	POST {v}/models/{model}:generateContent        chat
//	POST {v}/models/{model}:streamGenerateContent  chat, streamed: SSE with ?alt=sse, else a JSON array
//	POST {v}/models/{model}:countTokens            tokenize
//	POST {v}/models/{model}:embedContent           embedding
//	POST {v}/models/{model}:batchEmbedContents     embedding
//	GET  {v}/models                                models (on /v1 only with a Google key: header or ?key=)
//	GET  {v}/models/{model}                        one model (on /v1 only with a Google key)
//
// The model is the path's capture, '/' and ':' included
// ("/v1beta/models/openai/gpt-oss-120b:generateContent"); the key is
// x-goog-api-key or ?key= as well as the gateway's usual headers.
package gemini

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/jsonr"
)

// Route names, as the translator sees them in meta "route".
const (
	routeGenerate   = "generate"
	routeStreamSSE  = "stream-sse"
	routeStreamJSON = "stream-json"
	routeCount      = "count"
	routeEmbed      = "embed"
	routeBatchEmbed = "batch-embed"
	routeList       = "list"
	routeGet        = "get"
)

// credentials are where Google's SDKs send the key.
var credentials = []string{sdk.FromHeader + "x-goog-api-key", sdk.FromQuery + "key"}

// Manifest declares the routes under both API versions Google's SDKs use
// (the Go SDK defaults to /v1beta, the JS SDK 3.x to /v1).
func Manifest() sdk.Manifest {
	var routes []sdk.Route
	for _, v := range []string{"/v1beta", "/v1"} {
		routes = append(routes, versionRoutes(v)...)
	}
	return sdk.Manifest{Name: "gemini", Version: "0.1.0", Kind: sdk.KindTranslator, Format: "gemini",
		Routes: routes, StateVersion: stateVersion}
}

func versionRoutes(v string) []sdk.Route {
	model := v + "/models/{model}"
	chat := func(name, verb string, stream bool, sel []string, ct string) sdk.Route {
		return sdk.Route{Name: name, Kind: sdk.EndpointChat, Method: "POST", Path: model + ":" + verb,
			Select: sel, Credentials: credentials, StreamContentType: ct,
			Routing: &sdk.Routing{Model: sdk.FromPath + "model", StreamByDflt: stream,
				MaxTokens:  []string{"generationConfig.maxOutputTokens"},
				Vision:     []string{"*.inlineData", "*.fileData"},
				Tools:      []string{"tools"},
				Structured: []string{"generationConfig.responseMimeType=application/json"}}}
	}
	list := sdk.Route{Name: routeList, Kind: sdk.EndpointModels, Method: "GET", Path: v + "/models", Credentials: credentials}
	get := sdk.Route{Name: routeGet, Kind: sdk.EndpointModels, Method: "GET", Path: model, Credentials: credentials,
		Routing: &sdk.Routing{Model: sdk.FromPath + "model"}}
	if v == "/v1" {
		// OpenAI's paths otherwise: GET /v1/models, and GET /v1/models/{id}
		// should OpenAI's translator serve it.
		list.Select, get.Select = credentials, credentials
	}
	return []sdk.Route{
		chat(routeGenerate, "generateContent", false, nil, ""),
		chat(routeStreamSSE, "streamGenerateContent", true, []string{sdk.FromQuery + "alt=sse"}, "text/event-stream"),
		chat(routeStreamJSON, "streamGenerateContent", true, nil, "application/json"),
		{Name: routeCount, Kind: sdk.EndpointTokenize, Method: "POST", Path: model + ":countTokens", Credentials: credentials,
			Routing: &sdk.Routing{Model: sdk.FromPath + "model"}},
		{Name: routeEmbed, Kind: sdk.EndpointEmbedding, Method: "POST", Path: model + ":embedContent", Credentials: credentials,
			Routing: &sdk.Routing{Model: sdk.FromPath + "model"}},
		{Name: routeBatchEmbed, Kind: sdk.EndpointEmbedding, Method: "POST", Path: model + ":batchEmbedContents", Credentials: credentials,
			Routing: &sdk.Routing{Model: sdk.FromPath + "model"}},
		list,
		get,
	}
}

// Translator is stateless between calls (a stream's state is in the blob
// the host keeps); it reuses its parser, reader and buffers. Not safe for
// concurrent use.
type Translator struct {
	sdk.Unimplemented
	p   fastjson.Parser
	rd  jsonr.Reader
	buf []byte
}

// New returns a Translator.
func New() *Translator { return &Translator{} }

var (
	_ sdk.Translator           = (*Translator)(nil)
	_ sdk.EmbeddingTranslator  = (*Translator)(nil)
	_ sdk.TokenCountTranslator = (*Translator)(nil)
)
