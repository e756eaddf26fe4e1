//go:build wasip1

// Command noexport lacks the mr_call export; the host must refuse it.
package main

import "unsafe"

var buf = make([]byte, 4096)

//go:wasmexport mr_abi_version
func abiVersion() uint32 { return 1 << 16 }

//go:wasmexport mr_buf
func mrBuf(n uint32) uint32 { return uint32(uintptr(unsafe.Pointer(&buf[0]))) }

//go:wasmexport mr_init
func mrInit(n uint32) uint64 { return 0 }

func main() {}
