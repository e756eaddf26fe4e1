//go:build wasip1

// Command abi2 claims ABI version 2.0; the host must refuse to load it.
package main

import "github.com/mindrouter/mindrouter/plugins/testdata/broken/rawabi"

func init() { rawabi.Version = 2 << 16 }

func main() {}
