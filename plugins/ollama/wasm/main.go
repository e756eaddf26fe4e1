// Command wasm builds the Ollama adapter as a MindRouter WebAssembly plugin:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugins/ollama.wasm ./plugins/ollama/wasm
package main

import (
	"github.com/mindrouter/mindrouter/plugins/ollama"
	"github.com/mindrouter/mindrouter/sdk"
)

func init() { sdk.RegisterAdapter(ollama.Manifest(), ollama.New()) }

func main() {}
