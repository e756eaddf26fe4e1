// Command good is the goodlib translator as a WebAssembly plugin.
package main

import (
	"github.com/mindrouter/mindrouter/plugins/testdata/broken/goodlib"
	"github.com/mindrouter/mindrouter/sdk"
)

func init() { sdk.RegisterTranslator(goodlib.Manifest(), goodlib.New()) }

func main() {}
