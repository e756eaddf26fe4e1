// Command wasm is the simple translator's WebAssembly module:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o simple.wasm ./examples/simple/wasm
package main

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/examples/simple"
)

func init() { sdk.RegisterTranslator(simple.Manifest(), simple.New()) }

func main() {}
