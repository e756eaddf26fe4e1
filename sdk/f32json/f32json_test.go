package f32json

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// samples covers the forms a float32 takes: zeros of both signs,
// subnormals, the extremes, values around the StyleJS exponent switch, and
// random bit patterns (NaN and Inf included: written as 0).
func samples(n int) []float32 {
	v := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.1, 1e-6, 9.999999e-7, 1e-7, 1e21, 9.999999e20, 1e20,
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 1.17549435e-38, 123456789, 0.000123,
		float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		v = append(v, math.Float32frombits(r.Uint32()), float32(r.NormFloat64()*0.05))
	}
	return v
}

func TestAppendMatchesStdlib(t *testing.T) {
	for _, f := range samples(5000) {
		x := float64(f)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			for _, s := range []Style{StyleG, StyleJS} {
				if got := string(AppendNumber(nil, f, s)); got != "0" {
					t.Errorf("%v style %d: %q, want 0", f, s, got)
				}
			}
			continue
		}
		if got, want := string(AppendNumber(nil, f, StyleG)), strconv.FormatFloat(x, 'g', -1, 32); got != want {
			t.Errorf("StyleG %v: %q, want %q", f, got, want)
		}
		js, _ := json.Marshal(f)
		if got := string(AppendNumber(nil, f, StyleJS)); got != string(js) {
			t.Errorf("StyleJS %v: %q, want encoding/json's %q", f, got, js)
		}
		if n := len(AppendNumber(nil, f, StyleJS)); n > MaxNumberLen {
			t.Errorf("%v: %d bytes, over MaxNumberLen", f, n)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	vec := samples(2000)
	for _, s := range []Style{StyleG, StyleJS} {
		text := Append(nil, vec, s)
		got, err := Parse(nil, text)
		if err != nil {
			t.Fatalf("style %d: %v", s, err)
		}
		if len(got) != len(vec) {
			t.Fatalf("style %d: %d numbers, want %d", s, len(got), len(vec))
		}
		for i, f := range vec {
			want := f
			if x := float64(f); math.IsNaN(x) || math.IsInf(x, 0) {
				want = 0
			}
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Errorf("style %d, element %d: %v (%08x), want %v (%08x)", s, i, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
			}
		}
	}
}

func TestParse(t *testing.T) {
	ok := []struct {
		in   string
		want []float32
	}{
		{"[]", nil},
		{" [ ] ", nil},
		{"[1]", []float32{1}},
		{"[ -0.5 ,\n\t2e3\r, 0 ]", []float32{-0.5, 2000, 0}},
		{"[1E-2,1e+2]", []float32{0.01, 100}},
		{"[1e-50]", []float32{0}}, // underflow rounds to zero, as JSON decoders do
		{"[3.4028235e38]", []float32{math.MaxFloat32}},
	}
	for _, tc := range ok {
		got, err := Parse(nil, []byte(tc.in))
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%q: %v, want %v", tc.in, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: %v, want %v", tc.in, got, tc.want)
			}
		}
	}
	bad := []struct {
		in        string
		code, idx int
	}{
		{"", CodeSyntax, 0},
		{"1", CodeSyntax, 0},
		{"[", CodeNumber, 0},
		{"[1", CodeSyntax, 1},
		{"[1,]", CodeNumber, 1},
		{"[,1]", CodeNumber, 0},
		{"[1 2]", CodeSyntax, 1},
		{"[1]x", CodeSyntax, 1},
		{"[]]", CodeSyntax, 0},
		{`[1,"2"]`, CodeNumber, 1},
		{"[[1]]", CodeNumber, 0},
		{"[NaN]", CodeNumber, 0},
		{"[Infinity]", CodeNumber, 0},
		{"[-Inf]", CodeNumber, 0},
		{"[0x10]", CodeNumber, 0},
		{"[+1]", CodeNumber, 0},
		{"[01]", CodeNumber, 0},
		{"[1.]", CodeNumber, 0},
		{"[.5]", CodeNumber, 0},
		{"[1e]", CodeNumber, 0},
		{"[1_0]", CodeNumber, 0},
		{"[null]", CodeNumber, 0},
		{"[1,2,1e39]", CodeRange, 2},
		{"[-3.5e38]", CodeRange, 0},
	}
	for _, tc := range bad {
		dst := []float32{7}
		got, err := Parse(dst, []byte(tc.in))
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: err %v, want an *Error", tc.in, err)
			continue
		}
		if e.Code != tc.code || e.Index != tc.idx {
			t.Errorf("%q: code %d index %d (%v), want code %d index %d", tc.in, e.Code, e.Index, e, tc.code, tc.idx)
		}
		if len(got) != 1 {
			t.Errorf("%q: dst grew to %d on error", tc.in, len(got))
		}
	}
}

func TestResultPacking(t *testing.T) {
	for _, e := range []Error{{CodeSyntax, 0}, {CodeNumber, 3071}, {CodeRange, 1 << 30}, {CodeMemory, 0}} {
		r := ErrResult(e.Code, e.Index)
		if r >= 0 {
			t.Fatalf("%v: result %d not negative", e, r)
		}
		if got := *ResultError(r); got != e {
			t.Errorf("%v: unpacked %v", e, got)
		}
	}
}

func TestScanAllocs(t *testing.T) {
	text := Append(nil, samples(100), StyleG)
	out := make([]float32, 0, 300)
	if n := testing.AllocsPerRun(10, func() {
		out = out[:0]
		Scan(text, func(_ int, f float32) { out = append(out, f) })
	}); n != 0 {
		t.Errorf("Scan allocates %v times per call", n)
	}
	buf := make([]byte, 0, 8000)
	vec := samples(100)
	if n := testing.AllocsPerRun(10, func() { buf = Append(buf[:0], vec, StyleJS) }); n != 0 {
		t.Errorf("Append allocates %v times per call", n)
	}
}

// FuzzParse: whatever the bytes, Parse does not panic, agrees with
// encoding/json on whether they are an array of float32-range numbers,
// and reads the same values.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"[]", "[1,2.5,-3e-7]", "[1e39]", "[NaN]", " [ 0 ] ", "[1,]", `["x"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Parse(nil, b)
		var ref []float64
		refErr := json.Unmarshal(b, &ref)
		if err != nil {
			if refErr == nil && !rangeErr(err) {
				t.Fatalf("%q: %v, but encoding/json reads it as %v", b, err, ref)
			}
			return
		}
		if refErr != nil {
			t.Fatalf("%q: read as %v, but encoding/json says %v", b, got, refErr)
		}
		if len(got) != len(ref) {
			t.Fatalf("%q: %d numbers, encoding/json %d", b, len(got), len(ref))
		}
		for i := range ref {
			// encoding/json rounds to float64 first: at most one float32
			// step from the correctly rounded value.
			g, w := math.Float32bits(got[i]), math.Float32bits(float32(ref[i]))
			if g != w && g+1 != w && g != w+1 {
				t.Fatalf("%q: element %d is %v, encoding/json's %v", b, i, got[i], ref[i])
			}
		}
	})
}

func rangeErr(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == CodeRange
}

// BenchmarkAppend and BenchmarkParse: the host's side of one request's
// 3,072 floats (8×384), natively.
func BenchmarkAppend(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	vec := make([]float32, 3072)
	for i := range vec {
		vec[i] = float32(r.NormFloat64() * 0.05)
	}
	buf := make([]byte, 0, 64<<10)
	for _, s := range []Style{StyleG, StyleJS} {
		b.Run("style"+strconv.Itoa(int(s)), func(b *testing.B) {
			for b.Loop() {
				buf = Append(buf[:0], vec, s)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	vec := make([]float32, 3072)
	for i := range vec {
		vec[i] = float32(r.NormFloat64() * 0.05)
	}
	text := Append(nil, vec, StyleJS)
	out := make([]float32, 0, len(vec))
	for b.Loop() {
		out, _ = Parse(out[:0], text)
	}
}
