// Package hostfloat is the host side of the plugin ABI's float text
// functions (ABI 2.6, mr_v2.f32_format and mr_v2.f32_parse): a plugin's
// embedding vectors as decimal numbers, formatted and parsed natively in
// the guest's memory, because Go's strconv inside WebAssembly costs about
// ten times as much (~1.2 ms for one request's 3,072 floats). Both use
// package f32json, the codec the SDK runs natively, so a plugin writes the
// same bytes as .wasm or native.
//
// The functions work on any guest memory with a Read method (wazero's
// api.Memory has it), so a host wires them into its runtime without this
// package depending on one: the gateway's plugin host does, and so do the
// test harnesses that run plugins in a wazero runtime of their own.
//
// Every pointer and length is checked against the guest's memory, and
// source and destination must not overlap: a bad call gets
// f32json.CodeMemory, never a panic or a read outside. They allocate
// nothing and touch only the given memory.
package hostfloat

import (
	"encoding/binary"
	"math"

	"github.com/mindrouter/mindrouter/sdk/f32json"
)

// Memory is a guest's linear memory: Read returns a view (not a copy) of
// byteCount bytes at offset, or false when they are not all inside it.
// wazero's api.Memory satisfies it.
type Memory interface {
	Read(offset, byteCount uint32) ([]byte, bool)
}

// Format implements f32_format(style, src, n, dst, dst_cap) -> i64: the n
// little-endian float32s at src as a JSON array (f32json.Append) into dst.
// The result is the array's length in bytes; when that exceeds dst_cap,
// dst holds only a prefix and the guest calls again with room. A nil mem
// or a bad region is f32json.CodeMemory.
func Format(mem Memory, style, src, n, dst, dstCap uint32) int64 {
	in, out, ok := regions(mem, src, uint64(n)*4, dst, uint64(dstCap))
	if !ok {
		return f32json.ErrResult(f32json.CodeMemory, 0)
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
		put(f32json.AppendNumber(b, f, f32json.Style(style)))
	}
	buf[0] = ']'
	put(buf[:1])
	return int64(w)
}

// Parse implements f32_parse(src, len, dst, dst_cap) -> i64: the JSON
// array of numbers at src (f32json.Scan) as little-endian float32s into
// dst. The result is the count of numbers (only the first dst_cap are
// stored when it is larger) or a negative f32json error.
func Parse(mem Memory, src, n, dst, dstCap uint32) int64 {
	in, out, ok := regions(mem, src, uint64(n), dst, uint64(dstCap)*4)
	if !ok {
		return f32json.ErrResult(f32json.CodeMemory, 0)
	}
	count, err := f32json.Scan(in, func(i int, f float32) {
		if uint64(i) < uint64(dstCap) {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
		}
	})
	if e, isErr := err.(*f32json.Error); isErr {
		return f32json.ErrResult(e.Code, e.Index)
	}
	return int64(count)
}

// regions returns views of [src, src+srcLen) and [dst, dst+dstLen) in
// mem; ok is false when either lies outside it or they overlap (the
// output would overwrite input not yet read).
func regions(mem Memory, src uint32, srcLen uint64, dst uint32, dstLen uint64) (in, out []byte, ok bool) {
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
