// Package bundle is MindRouter's first-party bundle: the openai, anthropic,
// ollama-api and openai-responses translators and the vllm and ollama
// adapters served by one WebAssembly module, so the
// gateway can run a request's translator and adapter in one fused call per
// direction (see sdk.NewBundle and the fused ops of package abi). The
// separate modules stay; this one serves the same components with the same
// bytes.
//
// Build it with make plugins (plugins/bundle.wasm) or
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugins/bundle.wasm ./plugins/bundle/wasm
package bundle

import (
	"github.com/mindrouter/mindrouter/plugins/anthropic"
	"github.com/mindrouter/mindrouter/plugins/ollama"
	"github.com/mindrouter/mindrouter/plugins/ollamaapi"
	"github.com/mindrouter/mindrouter/plugins/openai"
	"github.com/mindrouter/mindrouter/plugins/responses"
	"github.com/mindrouter/mindrouter/plugins/vllm"
	"github.com/mindrouter/mindrouter/sdk"
)

// The bundle's manifest name and version.
const (
	Name    = "firstparty"
	Version = "0.1.0"
)

// Component indexes, as the host puts them in the call header.
const (
	OpenAI    uint16 = iota // translator
	VLLM                    // adapter
	Ollama                  // adapter
	Anthropic               // translator
	OllamaAPI               // translator (Ollama's client API)
	Responses               // translator (OpenAI's Responses API)
)

// Parts returns fresh components in index order, the openai translator
// with its same-dialect patch for vllm (sdk.Patch; see openaiVLLM) and its
// patch for ollama (openaiOllama). The
// responses translator has no patch: its requests always take the fused
// canonical path (a patch is per translator component, so the openai
// patch never sees a Responses route).
func Parts() []sdk.Component {
	p := parts()
	p[OpenAI] = p[OpenAI].Patch(vllm.Manifest().Name, newOpenAIVLLM()).
		Patch(ollama.Manifest().Name, newOpenAIOllama())
	return p
}

// parts returns the components without the patch.
func parts() []sdk.Component {
	return []sdk.Component{
		sdk.TranslatorPart(openai.Manifest(), openai.New()),
		sdk.AdapterPart(vllm.Manifest(), vllm.New()),
		sdk.AdapterPart(ollama.Manifest(), ollama.New()),
		sdk.TranslatorPart(anthropic.Manifest(), anthropic.New()),
		sdk.TranslatorPart(ollamaapi.Manifest(), ollamaapi.New()),
		sdk.TranslatorPart(responses.Manifest(), responses.New()),
	}
}

// New returns the bundle as a native plugin.
func New() *sdk.Plugin { return sdk.NewBundle(Name, Version, Parts()...) }
