// Command wasm builds the openai translator as a WebAssembly plugin:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugins/openai.wasm ./plugins/openai/wasm
package main

import (
	"github.com/mindrouter/mindrouter/plugins/openai"
	"github.com/mindrouter/mindrouter/sdk"
)

func init() { sdk.RegisterTranslator(openai.Manifest(), openai.New()) }

func main() {}
