//go:build wasip1

// Package rawabi implements the MindRouter ABI v1 exports by hand, without
// the SDK, so that test plugins can break the contract on purpose (a wrong
// ABI version, a malformed result, a forbidden import).
package rawabi

import (
	"unsafe"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// Version is what mr_abi_version returns.
var Version uint32 = abi.Version

// Manifest is the manifest JSON mr_init returns.
var Manifest = `{"name":"raw","version":"1","kind":"translator","format":"raw"}`

// Call, when set, answers mr_call and returns a packed result.
var Call func(op abi.Op, in []byte) uint64

var (
	inBuf []byte
	res   []byte
)

//go:wasmexport mr_abi_version
func abiVersion() uint32 { return Version }

//go:wasmexport mr_buf
func buf(n uint32) uint32 {
	if uint32(len(inBuf)) < n || len(inBuf) == 0 {
		inBuf = make([]byte, n+4096)
	}
	return uint32(uintptr(unsafe.Pointer(&inBuf[0])))
}

//go:wasmexport mr_init
func initf(n uint32) uint64 { return Result(abi.StatusOK, []byte(Manifest)) }

//go:wasmexport mr_call
func call(op, n uint32) uint64 {
	if Call != nil {
		return Call(abi.Op(op), inBuf[:n])
	}
	return Result(abi.StatusOK, nil)
}

// Result packs a result area with status and payload.
func Result(st abi.Status, payload []byte) uint64 {
	res = make([]byte, abi.ResultHeaderSize, abi.ResultHeaderSize+len(payload))
	abi.PutResultHeader(res, st, abi.ResultStateKeep, 0, 0, len(payload), 0)
	res = append(res, payload...)
	return abi.Pack(uint32(uintptr(unsafe.Pointer(&res[0]))), uint32(len(res)))
}

// Short returns a result area whose header claims more bytes than it holds.
func Short() uint64 {
	res = make([]byte, abi.ResultHeaderSize)
	abi.PutResultHeader(res, abi.StatusOK, 0, 0, 0, 1<<20, 0)
	return abi.Pack(uint32(uintptr(unsafe.Pointer(&res[0]))), uint32(len(res)))
}
