package pluginhost

import (
	"context"
	"encoding/binary"
	"math"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/f32json"
)

// The float text host functions (ABI 2.6): a plugin's embedding vectors as
// decimal numbers, formatted and parsed natively in the guest's memory,
// because Go's strconv inside WebAssembly costs about ten times as much
// (~1.2 ms for one request's 3,072 floats). Both use package f32json, the
// codec the SDK runs natively, so a plugin writes the same bytes as .wasm
// or native. Every pointer and length is checked against the guest's
// memory and source and destination must not overlap: a bad call gets
// f32json.CodeMemory, never a trap or a read outside. They allocate
// nothing and touch only the calling instance's memory.

// ExportFloatFuncs adds mr_v2.f32_format and mr_v2.f32_parse to b, the
// builder of the mr_v2 host module. Test harnesses that run plugins in
// their own wazero runtime use it too.
func ExportFloatFuncs(b wazero.HostModuleBuilder) wazero.HostModuleBuilder {
	return b.
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostF32Format), []api.ValueType{i32, i32, i32, i32, i32}, []api.ValueType{i64}).
		WithParameterNames("style", "src", "n", "dst", "dst_cap").
		Export(abi.ImportF32Format).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostF32Parse), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}).
		WithParameterNames("src", "len", "dst", "dst_cap").
		Export(abi.ImportF32Parse)
}

// hostF32Format implements f32_format(style, src, n, dst, dst_cap) -> i64:
// the n little-endian float32s at src as a JSON array (f32json.Append) into
// dst. The result is the array's length in bytes; when that exceeds
// dst_cap, dst holds only a prefix and the guest calls again with room.
func hostF32Format(_ context.Context, mod api.Module, stack []uint64) {
	style := f32json.Style(uint32(stack[0]))
	src, n, dst, dstCap := uint32(stack[1]), uint64(uint32(stack[2])), uint32(stack[3]), uint32(stack[4])
	in, out, ok := guestRegions(mod.Memory(), src, n*4, dst, uint64(dstCap))
	if !ok {
		stack[0] = uint64(f32json.ErrResult(f32json.CodeMemory, 0))
		return
	}
	var buf [f32json.MaxNumberLen + 2]byte
	w, full := 0, false
	put := func(b []byte) {
		if !full && w+len(b) <= len(out) {
			copy(out[w:], b)
		} else {
			full = true // a later, shorter number must not land after a gap
		}
		w += len(b)
	}
	buf[0] = '['
	put(buf[:1])
	for i := range int(n) {
		b := buf[:0]
		if i > 0 {
			b = append(b, ',')
		}
		f := math.Float32frombits(binary.LittleEndian.Uint32(in[4*i:]))
		put(f32json.AppendNumber(b, f, style))
	}
	buf[0] = ']'
	put(buf[:1])
	stack[0] = uint64(w)
}

// hostF32Parse implements f32_parse(src, len, dst, dst_cap) -> i64: the
// JSON array of numbers at src (f32json.Scan) as little-endian float32s
// into dst. The result is the count of numbers (only the first dst_cap
// are stored when it is larger) or a negative f32json error.
func hostF32Parse(_ context.Context, mod api.Module, stack []uint64) {
	src, n, dst, dstCap := uint32(stack[0]), uint64(uint32(stack[1])), uint32(stack[2]), uint64(uint32(stack[3]))
	in, out, ok := guestRegions(mod.Memory(), src, n, dst, dstCap*4)
	if !ok {
		stack[0] = uint64(f32json.ErrResult(f32json.CodeMemory, 0))
		return
	}
	count, err := f32json.Scan(in, func(i int, f float32) {
		if uint64(i) < dstCap {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
		}
	})
	if e, isErr := err.(*f32json.Error); isErr {
		stack[0] = uint64(f32json.ErrResult(e.Code, e.Index))
		return
	}
	stack[0] = uint64(count)
}

// guestRegions returns views of [src, src+srcLen) and [dst, dst+dstLen) in
// mem; ok is false when either lies outside it or they overlap (the
// output would overwrite input not yet read).
func guestRegions(mem api.Memory, src uint32, srcLen uint64, dst uint32, dstLen uint64) (in, out []byte, ok bool) {
	if mem == nil || srcLen > math.MaxUint32 || dstLen > math.MaxUint32 {
		return nil, nil, false
	}
	if in, ok = mem.Read(src, uint32(srcLen)); !ok {
		return nil, nil, false
	}
	if out, ok = mem.Read(dst, uint32(dstLen)); !ok {
		return nil, nil, false
	}
	if srcLen > 0 && dstLen > 0 && uint64(src) < uint64(dst)+dstLen && uint64(dst) < uint64(src)+srcLen {
		return nil, nil, false
	}
	return in, out, true
}
