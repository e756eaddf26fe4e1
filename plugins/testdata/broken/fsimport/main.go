//go:build wasip1

// Command fsimport opens a file, which links wasi_snapshot_preview1.path_open:
// an import the host must refuse.
package main

import (
	"os"

	"github.com/mindrouter/mindrouter/plugins/testdata/broken/rawabi"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

func init() {
	rawabi.Call = func(op abi.Op, in []byte) uint64 {
		f, err := os.Open(string(in))
		if err == nil {
			f.Close()
		}
		return rawabi.Result(abi.StatusOK, nil)
	}
}

func main() {}
