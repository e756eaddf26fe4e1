//go:build wasip1

// Command badresult loads fine but answers OpRequestDecode with a packed
// result pointing outside its linear memory (a protocol violation).
package main

import (
	"github.com/mindrouter/mindrouter/plugins/testdata/broken/rawabi"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

func init() {
	rawabi.Call = func(op abi.Op, in []byte) uint64 {
		switch op {
		case abi.OpRequestDecode:
			return abi.Pack(0xFFFF0000, 4096)
		case abi.OpResponseEncode:
			// A result header whose lengths exceed the area.
			return rawabi.Short()
		}
		return rawabi.Result(abi.StatusOK, []byte(`{}`))
	}
}

func main() {}
