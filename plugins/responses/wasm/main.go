// Command wasm builds the OpenAI Responses translator as a WebAssembly
// plugin:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugins/responses.wasm ./plugins/responses/wasm
package main

import (
	"github.com/mindrouter/mindrouter/plugins/responses"
	"github.com/mindrouter/mindrouter/sdk"
)

func init() { sdk.RegisterTranslator(responses.Manifest(), responses.New()) }

func main() {}
