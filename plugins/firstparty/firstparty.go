// Package firstparty names MindRouter's first-party plugins as native
// plugins: for each name a plugins.yaml entry gives after "native:", a
// factory of the very Go package the .wasm module is built from.
//
//	native:firstparty  the bundle (plugins/bundle: openai, vllm, ollama, anthropic, ollama-api, responses; kind bundle)
//	native:openai      the OpenAI translator (kind translator)
//	native:anthropic   the Anthropic Messages translator (kind translator)
//	native:ollama-api  the translator for Ollama's client API (kind translator)
//	native:vllm        the vLLM adapter (kind adapter)
//	native:ollama      the Ollama adapter (kind adapter)
//
// It only lists them: linking them into a program is that program's
// choice. The gateway command (core/cmd/mindrouter) registers Factories
// with pluginhost.RegisterNative, and so do tests that serve native
// plugins; the gateway's library packages under core/ never import
// plugins/ (core/internal/lint's boundary test). Native plugins are for
// measurement — the same plugin code as WebAssembly and as native Go,
// "the WebAssembly tax" — and tests: they run without a sandbox (see
// pluginhost's native.go).
package firstparty

import (
	"github.com/mindrouter/mindrouter/plugins/anthropic"
	"github.com/mindrouter/mindrouter/plugins/bundle"
	"github.com/mindrouter/mindrouter/plugins/ollama"
	"github.com/mindrouter/mindrouter/plugins/ollamaapi"
	"github.com/mindrouter/mindrouter/plugins/openai"
	"github.com/mindrouter/mindrouter/plugins/vllm"
	"github.com/mindrouter/mindrouter/sdk"
)

// Factories are the first-party native plugins by the name plugins.yaml
// gives after "native:". Each call of a factory returns a fresh plugin.
var Factories = map[string]func() *sdk.Plugin{
	bundle.Name: bundle.New,
	"openai":    func() *sdk.Plugin { return sdk.NewTranslator(openai.Manifest(), openai.New()) },
	"vllm":      func() *sdk.Plugin { return sdk.NewAdapter(vllm.Manifest(), vllm.New()) },
	"ollama":    func() *sdk.Plugin { return sdk.NewAdapter(ollama.Manifest(), ollama.New()) },
	"anthropic": func() *sdk.Plugin { return sdk.NewTranslator(anthropic.Manifest(), anthropic.New()) },
	"ollama-api": func() *sdk.Plugin {
		return sdk.NewTranslator(ollamaapi.Manifest(), ollamaapi.New())
	},
}
