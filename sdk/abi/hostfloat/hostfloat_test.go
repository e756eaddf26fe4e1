package hostfloat

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/f32json"
)

// mem is a guest memory over a byte slice.
type mem []byte

func (m mem) Read(off, n uint32) ([]byte, bool) {
	if uint64(off)+uint64(n) > uint64(len(m)) {
		return nil, false
	}
	return m[off : off+n], true
}

func TestFormatParse_RoundTrip(t *testing.T) {
	m := make(mem, 4096)
	vec := []float32{0, 1e-7, -2.5, math.MaxFloat32}
	for i, f := range vec {
		binary.LittleEndian.PutUint32(m[4*i:], math.Float32bits(f))
	}
	for _, style := range []f32json.Style{f32json.StyleG, f32json.StyleJS} {
		want := f32json.Append(nil, vec, style)
		n := Format(m, uint32(style), 0, uint32(len(vec)), 100, 1000)
		if n != int64(len(want)) || !bytes.Equal(m[100:100+n], want) {
			t.Fatalf("style %d: %d %q, want %q", style, n, m[100:100+max(n, 0)], want)
		}
		if short := Format(m, uint32(style), 0, uint32(len(vec)), 100, 3); short != n {
			t.Errorf("style %d short room: %d, want %d", style, short, n)
		}
		if got := Parse(m, 100, uint32(n), 2000, 8); got != int64(len(vec)) {
			t.Fatalf("parse: %d", got)
		}
		for i, f := range vec {
			if b := binary.LittleEndian.Uint32(m[2000+4*i:]); b != math.Float32bits(f) {
				t.Errorf("element %d: %08x, want %08x", i, b, math.Float32bits(f))
			}
		}
	}
}

func TestBadRegions(t *testing.T) {
	m := make(mem, 64)
	copy(m, "[1,2]")
	memErr := f32json.ErrResult(f32json.CodeMemory, 0)
	for name, got := range map[string]int64{
		"nil memory":     Parse(nil, 0, 5, 32, 2),
		"format outside": Format(m, 0, 60, 2, 0, 10),
		"format wraps":   Format(m, 0, 0, 1<<30, 32, 8),
		"parse outside":  Parse(m, 0, 5, 60, 2),
		"parse overlap":  Parse(m, 0, 5, 4, 2),
	} {
		if got != memErr {
			t.Errorf("%s: %d, want CodeMemory", name, got)
		}
	}
	if got := Parse(m, 0, 4, 8, 2); got >= 0 || f32json.ResultError(got).Code != f32json.CodeSyntax {
		t.Errorf("truncated array: %d, want a syntax error", got)
	}
}
