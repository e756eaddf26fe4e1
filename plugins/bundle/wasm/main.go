// Command wasm builds the first-party bundle (openai, vllm, ollama in one
// module) as a MindRouter WebAssembly plugin:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugins/bundle.wasm ./plugins/bundle/wasm
package main

import (
	"github.com/mindrouter/mindrouter/plugins/bundle"
	"github.com/mindrouter/mindrouter/sdk"
)

func init() { sdk.RegisterBundle(bundle.Name, bundle.Version, bundle.Parts()...) }

func main() {}
