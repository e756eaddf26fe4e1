package pluginhost

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/mindrouter/mindrouter/sdk/f32json"
)

// memModule is a module of one 1-page (64 KiB) memory, the guest side of
// the float functions' tests.
func memModule(t testing.TB) api.Module {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { r.Close(ctx) })
	// magic, version; memory section: 1 memory, min 1 page; export "memory".
	bin := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		5, 3, 1, 0, 1,
		7, 10, 1, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0}
	mod, err := r.Instantiate(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

func callFormat(mod api.Module, style, src, n, dst, dstCap uint32) int64 {
	stack := []uint64{uint64(style), uint64(src), uint64(n), uint64(dst), uint64(dstCap)}
	hostF32Format(context.Background(), mod, stack)
	return int64(stack[0])
}

func callParse(mod api.Module, src, n, dst, dstCap uint32) int64 {
	stack := []uint64{uint64(src), uint64(n), uint64(dst), uint64(dstCap)}
	hostF32Parse(context.Background(), mod, stack)
	return int64(stack[0])
}

func randomVector(r *rand.Rand, n int) []float32 {
	v := []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -1.1754942e-38, math.MaxFloat32, 1e-7, 1e21,
		float32(math.NaN()), float32(math.Inf(-1))}
	for len(v) < n {
		v = append(v, math.Float32frombits(r.Uint32()), float32(r.NormFloat64()*0.05))
	}
	return v[:n]
}

// The host writes exactly what the codec writes natively, and reads back
// what it wrote, in both styles.
func TestF32FormatParse_MatchCodec(t *testing.T) {
	mod := memModule(t)
	mem := mod.Memory()
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 9, 384, 1000} {
		vec := randomVector(r, n)
		raw := make([]byte, 4*n)
		for i, f := range vec {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
		}
		mem.Write(0, raw)
		for _, style := range []f32json.Style{f32json.StyleG, f32json.StyleJS} {
			want := f32json.Append(nil, vec, style)
			const dst = 16384
			got := callFormat(mod, uint32(style), 0, uint32(n), dst, 65536-dst)
			text, _ := mem.Read(dst, uint32(got))
			if got != int64(len(want)) || !bytes.Equal(text, want) {
				t.Fatalf("n=%d style %d: %d bytes %.80q, want %d %.80q", n, style, got, text, len(want), want)
			}
			// Too little room: the length it needs, so the guest can retry.
			if got := callFormat(mod, uint32(style), 0, uint32(n), dst, uint32(len(want)/2)); got != int64(len(want)) {
				t.Errorf("n=%d short buffer: %d, want %d", n, got, len(want))
			}
			const out = 60000
			cnt := callParse(mod, dst, uint32(len(want)), out, 1100)
			if cnt != int64(n) {
				t.Fatalf("n=%d style %d: parse %d", n, style, cnt)
			}
			back, _ := mem.Read(out, uint32(4*n))
			ref, _ := f32json.Parse(nil, want)
			for i := range n {
				if b := binary.LittleEndian.Uint32(back[4*i:]); b != math.Float32bits(ref[i]) {
					t.Fatalf("n=%d element %d: %08x, want %08x", n, i, b, math.Float32bits(ref[i]))
				}
			}
		}
	}
}

// Counting beyond the room: only dst_cap numbers stored, the count says
// how many there are, and nothing past dst_cap changes.
func TestF32Parse_ShortDestination(t *testing.T) {
	mod := memModule(t)
	mem := mod.Memory()
	mem.Write(0, []byte("[1,2,3,4]"))
	mem.Write(100, bytes.Repeat([]byte{0xee}, 16))
	if got := callParse(mod, 0, 9, 100, 2); got != 4 {
		t.Fatalf("count %d, want 4", got)
	}
	b, _ := mem.Read(100, 16)
	if math.Float32frombits(binary.LittleEndian.Uint32(b)) != 1 || math.Float32frombits(binary.LittleEndian.Uint32(b[4:])) != 2 ||
		!bytes.Equal(b[8:], bytes.Repeat([]byte{0xee}, 8)) {
		t.Errorf("destination %x", b)
	}
}

func TestF32Parse_Errors(t *testing.T) {
	mod := memModule(t)
	mem := mod.Memory()
	for _, tc := range []struct {
		in          string
		code, index int
	}{
		{"[1,NaN]", f32json.CodeNumber, 1},
		{"[Infinity]", f32json.CodeNumber, 0},
		{"[1,2,1e39]", f32json.CodeRange, 2},
		{`{"a":1}`, f32json.CodeSyntax, 0},
		{"[1,2", f32json.CodeSyntax, 2},
	} {
		mem.Write(0, []byte(tc.in))
		got := callParse(mod, 0, uint32(len(tc.in)), 1000, 10)
		if got >= 0 {
			t.Errorf("%q: %d, want an error", tc.in, got)
			continue
		}
		if e := f32json.ResultError(got); e.Code != tc.code || e.Index != tc.index {
			t.Errorf("%q: %v (code %d index %d), want code %d index %d", tc.in, e, e.Code, e.Index, tc.code, tc.index)
		}
	}
}

// A hostile or buggy guest's pointers: outside memory, wrapping around,
// huge counts, overlapping regions. Each is CodeMemory, never a panic, and
// memory outside the destination is untouched.
func TestF32_Bounds(t *testing.T) {
	mod := memModule(t)
	mem := mod.Memory()
	mem.Write(0, []byte("[1,2,3]"))
	size := mem.Size() // 65536
	memErr := f32json.ErrResult(f32json.CodeMemory, 0)
	for _, tc := range []struct {
		name string
		got  int64
	}{
		{"format src outside", callFormat(mod, 0, size, 1, 0, 100)},
		{"format src straddles the end", callFormat(mod, 0, size-4, 2, 0, 100)},
		{"format n*4 wraps", callFormat(mod, 0, 0, 1<<30, 1000, 100)},
		{"format n huge", callFormat(mod, 0, 0, math.MaxUint32, 1000, 100)},
		{"format dst outside", callFormat(mod, 0, 0, 1, size-10, 100)},
		{"format dst at max", callFormat(mod, 0, 0, 1, math.MaxUint32, 1)},
		{"format overlap", callFormat(mod, 0, 0, 4, 8, 100)},
		{"format dst inside src", callFormat(mod, 0, 0, 100, 40, 10)},
		{"parse src outside", callParse(mod, size, 1, 1000, 10)},
		{"parse len huge", callParse(mod, 0, math.MaxUint32, 1000, 10)},
		{"parse dst outside", callParse(mod, 0, 7, size-8, 10)},
		{"parse cap*4 wraps", callParse(mod, 0, 7, 1000, 1<<30)},
		{"parse cap huge", callParse(mod, 0, 7, 1000, math.MaxUint32)},
		{"parse overlap", callParse(mod, 0, 7, 4, 3)},
	} {
		if tc.got != memErr {
			t.Errorf("%s: %d, want %d (CodeMemory)", tc.name, tc.got, memErr)
		}
	}
	// Adjacent, not overlapping, is fine.
	if got := callParse(mod, 0, 7, 7, 3); got != 3 {
		t.Errorf("adjacent regions: %d, want 3", got)
	}
	// Zero-length regions at the end of memory are in bounds.
	if got := callFormat(mod, 0, size, 0, 0, 2); got != 2 {
		t.Errorf("empty vector: %d, want 2", got)
	}
}

func TestF32_NoAllocs(t *testing.T) {
	mod := memModule(t)
	mem := mod.Memory()
	vec := randomVector(rand.New(rand.NewPCG(5, 6)), 384)
	for i, f := range vec {
		mem.WriteUint32Le(uint32(4*i), math.Float32bits(f))
	}
	stackF := make([]uint64, 5)
	stackP := make([]uint64, 4)
	ctx := context.Background()
	var n uint64
	if a := testing.AllocsPerRun(20, func() {
		stackF[0], stackF[1], stackF[2], stackF[3], stackF[4] = 0, 0, 384, 2000, 20000
		hostF32Format(ctx, mod, stackF)
		n = stackF[0]
	}); a != 0 {
		t.Errorf("f32_format allocates %v times per call", a)
	}
	if a := testing.AllocsPerRun(20, func() {
		stackP[0], stackP[1], stackP[2], stackP[3] = 2000, n, 40000, 384
		hostF32Parse(ctx, mod, stackP)
	}); a != 0 || stackP[0] != 384 {
		t.Errorf("f32_parse allocates %v times per call (result %d)", a, stackP[0])
	}
}

// FuzzF32Parse: arbitrary guest bytes and regions never panic, and a
// success agrees with the codec.
func FuzzF32Parse(f *testing.F) {
	f.Add([]byte("[1,2.5,-3e-7]"), uint32(0), uint32(100), uint32(8))
	f.Add([]byte("[NaN]"), uint32(65530), uint32(1<<20), uint32(1))
	mod := memModule(f)
	f.Fuzz(func(t *testing.T, text []byte, src, dst, dstCap uint32) {
		if len(text) > 30000 {
			return
		}
		mod.Memory().Write(0, text)
		got := callParse(mod, 0, uint32(len(text)), dst, dstCap)
		if got < 0 && f32json.ResultError(got).Code == f32json.CodeMemory {
			return
		}
		ref, err := f32json.Parse(nil, text)
		if (err != nil) != (got < 0) || (err == nil && got != int64(len(ref))) {
			t.Fatalf("%q: host %d, codec %d numbers, %v", text, got, len(ref), err)
		}
		_ = callParse(mod, src, uint32(len(text)), dst, dstCap)
	})
}
