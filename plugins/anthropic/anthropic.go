// Package anthropic is MindRouter's translator for the Anthropic Messages
// API: /v1/messages (and /anthropic/v1/messages) requests into the
// canonical schema, and canonical responses, stream chunks, errors and
// model lists back into the bytes the official Anthropic SDKs expect.
//
// One Translator value serves one call at a time (the SDK guarantees it);
// per-stream state lives in the host-owned state blob, never in the value.
// JSON is read with a reused fastjson.Parser and written with sdk/jsonw, so
// nothing on the hot path uses reflection.
package anthropic

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
)

// Route names served by this translator (meta "route").
const (
	RouteMessages         = "messages"
	RouteMessagesPrefixed = "messages-anthropic"
	RouteModels           = "models"
	// The SDKs pointed at the gateway's root (@anthropic-ai/sdk,
	// anthropic-sdk-go) list models at GET /v1/models, OpenAI's path:
	// routes selected by the anthropic-version header every Anthropic
	// client sends (ABI 2.8), and one model at GET .../v1/models/{id}.
	RouteModelsRoot = "models-root"
	RouteModel      = "model"
	RouteModelRoot  = "model-root"
	// count_tokens (https://docs.claude.com/en/api/messages-count-tokens):
	// a Messages body without max_tokens, answered {"input_tokens": n}
	// counted by the gateway's tokenizer.
	RouteCountTokens         = "count_tokens"
	RouteCountTokensPrefixed = "count_tokens-anthropic"
)

// selectAnthropic picks the Anthropic routes on paths OpenAI's translator
// serves too: every Anthropic SDK sends anthropic-version.
var selectAnthropic = []string{sdk.FromHeader + "anthropic-version"}

// Manifest describes the plugin to the host.
func Manifest() sdk.Manifest {
	// Anthropic has no stream_options: usage is always in the stream.
	// Images are blocks of type "image", in messages and tool results.
	routing := &sdk.Routing{Model: "model", Stream: "stream", MaxTokens: []string{"max_tokens"},
		Vision: []string{"*.type=image"}, Tools: []string{"tools"}, Structured: []string{"output_config.format"}}
	return sdk.Manifest{
		Name:    "anthropic",
		Version: "0.1.0",
		Kind:    sdk.KindTranslator,
		Format:  "anthropic",
		Routes: []sdk.Route{
			{Name: RouteMessages, Kind: sdk.EndpointChat, Method: "POST", Path: "/v1/messages",
				StreamContentType: "text/event-stream", Routing: routing},
			{Name: RouteMessagesPrefixed, Kind: sdk.EndpointChat, Method: "POST", Path: "/anthropic/v1/messages",
				StreamContentType: "text/event-stream", Routing: routing},
			{Name: RouteCountTokens, Kind: sdk.EndpointTokenize, Method: "POST", Path: "/v1/messages/count_tokens",
				Routing: &sdk.Routing{Model: "model"}},
			{Name: RouteCountTokensPrefixed, Kind: sdk.EndpointTokenize, Method: "POST", Path: "/anthropic/v1/messages/count_tokens",
				Routing: &sdk.Routing{Model: "model"}},
			{Name: RouteModels, Kind: sdk.EndpointModels, Method: "GET", Path: "/anthropic/v1/models"},
			{Name: RouteModelsRoot, Kind: sdk.EndpointModels, Method: "GET", Path: "/v1/models", Select: selectAnthropic},
			{Name: RouteModel, Kind: sdk.EndpointModels, Method: "GET", Path: "/anthropic/v1/models/{model}",
				Routing: &sdk.Routing{Model: sdk.FromPath + "model"}},
			{Name: RouteModelRoot, Kind: sdk.EndpointModels, Method: "GET", Path: "/v1/models/{model}", Select: selectAnthropic,
				Routing: &sdk.Routing{Model: sdk.FromPath + "model"}},
		},
		StateVersion: stateVersion,
	}
}

// Translator implements sdk.Translator for the Anthropic Messages dialect.
// It is not safe for concurrent use; the scratch buffers it holds are
// reused from call to call and carry no stream state.
type Translator struct {
	p  fastjson.Parser // reused for requests and tool arguments
	st sdk.StateWriter // scratch for the state blob
}

// New returns a Translator.
func New() *Translator { return &Translator{} }

var _ sdk.Translator = (*Translator)(nil)
