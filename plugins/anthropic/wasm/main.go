// Command wasm builds the anthropic translator as a WebAssembly plugin:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugins/anthropic.wasm ./plugins/anthropic/wasm
package main

import (
	"github.com/mindrouter/mindrouter/plugins/anthropic"
	"github.com/mindrouter/mindrouter/sdk"
)

func init() { sdk.RegisterTranslator(anthropic.Manifest(), anthropic.New()) }

func main() {}
