//go:build wasip1

// Command abi2 claims an ABI major version the host does not speak (3.0;
// the directory keeps the name it had when the host spoke 1.0); the host
// must refuse to load it.
package main

import "github.com/mindrouter/mindrouter/plugins/testdata/broken/rawabi"

func init() { rawabi.Version = 3 << 16 }

func main() {}
