//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// The one plugin this module serves, set by Register* from an init func.
var registered *Plugin

// inBuf is the input scratch buffer the host writes calls into. It is a
// package global so the Go GC keeps it alive while the host holds its address.
var inBuf []byte

// RegisterTranslator makes t the plugin this WebAssembly module serves. Call
// it once, from an init func.
func RegisterTranslator(m Manifest, t Translator) { register(NewTranslator(m, t)) }

// RegisterAdapter makes a the plugin this WebAssembly module serves. Call it
// once, from an init func.
func RegisterAdapter(m Manifest, a Adapter) { register(NewAdapter(m, a)) }

// RegisterBundle makes parts, in this order, the components this module
// serves (see NewBundle). Call it once, from an init func, instead of
// RegisterTranslator or RegisterAdapter.
func RegisterBundle(name, version string, parts ...Component) {
	register(NewBundle(name, version, parts...))
}

func register(p *Plugin) {
	if registered != nil {
		panic("sdk: a plugin is already registered in this module")
	}
	registered = p
}

//go:wasmexport mr_abi_version
func mrABIVersion() uint32 { return abi.Version }

//go:wasmexport mr_buf
func mrBuf(minCap uint32) uint32 {
	if uint32(cap(inBuf)) < minCap || len(inBuf) == 0 {
		n := minCap
		if n < 4096 {
			n = 4096
		}
		inBuf = make([]byte, n)
	}
	inBuf = inBuf[:cap(inBuf)]
	return uint32(uintptr(unsafe.Pointer(&inBuf[0])))
}

//go:wasmexport mr_init
func mrInit(n uint32) uint64 {
	if registered == nil {
		return packResult(errorArea("sdk: no plugin registered; call sdk.RegisterTranslator, RegisterAdapter or RegisterBundle from init"))
	}
	if n > uint32(len(inBuf)) {
		return packResult(registered.result(abi.StatusBadInput, 0, nil, nil, "sdk: input longer than buffer"))
	}
	return packResult(registered.Init(inBuf[:n]))
}

//go:wasmexport mr_call
func mrCall(op, n uint32) uint64 {
	if registered == nil {
		return packResult(errorArea("sdk: no plugin registered"))
	}
	if n > uint32(len(inBuf)) {
		return packResult(registered.result(abi.StatusBadInput, 0, nil, nil, "sdk: input longer than buffer"))
	}
	return packResult(registered.Call(abi.Op(op), inBuf[:n]))
}

// lastResult keeps the most recent result area reachable for the GC until
// the host has read it.
var lastResult []byte

func packResult(r []byte) uint64 {
	lastResult = r
	if len(r) == 0 {
		return 0
	}
	return abi.Pack(uint32(uintptr(unsafe.Pointer(&r[0]))), uint32(len(r)))
}

func errorArea(msg string) []byte {
	r := make([]byte, abi.ResultHeaderSize, abi.ResultHeaderSize+len(msg))
	abi.PutResultHeader(r, abi.StatusPluginError, abi.ResultStateKeep, 0, 0, 0, len(msg))
	return append(r, msg...)
}

//go:wasmimport mr_v2 log
func hostLogImport(level uint32, ptr unsafe.Pointer, n uint32)

func hostLog(level int, msg string) {
	if len(msg) == 0 {
		return
	}
	hostLogImport(uint32(int32(level)), unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
}
