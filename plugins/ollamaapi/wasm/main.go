// Command wasm builds the Ollama-API translator as a WebAssembly plugin:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugins/ollamaapi.wasm ./plugins/ollamaapi/wasm
package main

import (
	"github.com/mindrouter/mindrouter/plugins/ollamaapi"
	"github.com/mindrouter/mindrouter/sdk"
)

func init() { sdk.RegisterTranslator(ollamaapi.Manifest(), ollamaapi.New()) }

func main() {}
