// Command wasm builds the vllm adapter as a MindRouter WebAssembly plugin.
package main

import (
	"github.com/mindrouter/mindrouter/plugins/vllm"
	"github.com/mindrouter/mindrouter/sdk"
)

func init() { sdk.RegisterAdapter(vllm.Manifest(), vllm.New()) }

func main() {}
