// Command wasm builds the Gemini translator as a WebAssembly plugin:
//
//	cd plugins/gemini && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o ../gemini.wasm ./wasm
package main

import (
	"github.com/mindrouter/mindrouter/plugins/gemini"
	"github.com/mindrouter/mindrouter/sdk"
)

func init() { sdk.RegisterTranslator(gemini.Manifest(), gemini.New()) }

func main() {}
