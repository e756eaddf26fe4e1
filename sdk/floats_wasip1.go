//go:build wasip1

package sdk

import (
	"slices"
	"unsafe"

	"github.com/mindrouter/mindrouter/sdk/f32json"
)

// The host formats and parses in guest memory: src and dst are this
// module's own buffers, which the call's pointers keep alive. Each
// returns the count it needed (see f32json.ErrResult); when that exceeds
// the room given, the buffer grows to it and the call is repeated, which
// the first guesses make rare.

//go:wasmimport mr_v2 f32_format
func hostF32Format(style uint32, src unsafe.Pointer, n uint32, dst unsafe.Pointer, dstCap uint32) int64

//go:wasmimport mr_v2 f32_parse
func hostF32Parse(src unsafe.Pointer, n uint32, dst unsafe.Pointer, dstCap uint32) int64

func appendFloat32s(dst []byte, vec []float32, s f32json.Style) []byte {
	if len(vec) == 0 {
		return append(dst, "[]"...)
	}
	need := 12*len(vec) + 2 // most float32s take 10–12 bytes with the comma
	for {
		dst = slices.Grow(dst, need)
		free := dst[len(dst):cap(dst)]
		r := hostF32Format(uint32(s), unsafe.Pointer(unsafe.SliceData(vec)), uint32(len(vec)),
			unsafe.Pointer(unsafe.SliceData(free)), uint32(len(free)))
		if r < 0 {
			// Our own buffers: only a host bug gets here; the SDK turns the
			// panic into a plugin error.
			panic("sdk: mr_v2.f32_format: " + f32json.ResultError(r).Error())
		}
		if int(r) <= len(free) {
			return dst[:len(dst)+int(r)]
		}
		need = int(r)
	}
}

func parseFloat32s(dst []float32, src []byte) ([]float32, error) {
	if len(src) == 0 {
		return dst, f32json.ErrSyntax
	}
	need := len(src)/8 + 1 // a float32's shortest text is mostly 10 or more bytes
	for {
		dst = slices.Grow(dst, need)
		free := dst[len(dst):cap(dst)]
		r := hostF32Parse(unsafe.Pointer(unsafe.SliceData(src)), uint32(len(src)),
			unsafe.Pointer(unsafe.SliceData(free)), uint32(len(free)))
		if r < 0 {
			return dst, f32json.ResultError(r)
		}
		if int(r) <= len(free) {
			return dst[:len(dst)+int(r)], nil
		}
		need = int(r)
	}
}
