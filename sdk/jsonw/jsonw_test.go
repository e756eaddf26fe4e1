package jsonw

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"unicode/utf8"
)

func TestString_MatchesEncodingJSON(t *testing.T) {
	cases := []string{"", "plain", "quote\"back\\slash", "nl\ncr\rtab\t", "\x00\x01\x1f\x7f",
		"héllo ✓ 😀", "\u2028\u2029", "bad\xffutf8", "<script>&"}
	for _, s := range cases {
		got := String(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("String(%q) = %s: not JSON: %v", s, got, err)
		}
		want := s
		if s == "bad\xffutf8" {
			want = "bad\ufffdutf8"
		}
		if back != want {
			t.Errorf("round trip %q: got %q", s, back)
		}
	}
}

func TestFloat(t *testing.T) {
	for _, f := range []float64{0, 1, -1.5, 1e-7, 1e21, 123456789.125, 0.1} {
		got := Float(nil, f)
		var back float64
		if err := json.Unmarshal(got, &back); err != nil || back != f {
			t.Errorf("Float(%v) = %s (back %v, err %v)", f, got, back, err)
		}
	}
	if got := string(Float(nil, math.NaN())); got != "null" {
		t.Errorf("NaN = %s", got)
	}
}

// The whole-number fast path writes what strconv's shortest form does.
func TestFloat_WholeNumbers(t *testing.T) {
	fs := []float64{0, math.Copysign(0, -1), 1, -1, 30, 17, -250, 999999999999999, -999999999999999,
		1e15, 1e15 + 1, 1 << 53, 1e20, 12345.5, 0.5, -0.5}
	for i := range 2000 {
		fs = append(fs, float64(i*i*i)-1e6, math.Ldexp(float64(i), i%60))
	}
	for _, f := range fs {
		fm := byte('f')
		if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
			fm = 'e'
		}
		want := strconv.AppendFloat(nil, f, fm, -1, 64)
		if fm == 'e' {
			continue // not whole numbers below 1e15: the path under test is not taken
		}
		if got := Float(nil, f); string(got) != string(want) {
			t.Errorf("Float(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestW_Commas(t *testing.T) {
	var w W
	w.Obj()
	w.Key("a")
	w.Int(1)
	w.Key("b")
	w.Arr()
	w.Str("x")
	w.Obj()
	w.Key("c")
	w.Bool(true)
	w.EndObj()
	w.Null()
	w.EndArr()
	w.Key("d")
	w.Obj()
	w.EndObj()
	w.EndObj()
	want := `{"a":1,"b":["x",{"c":true},null],"d":{}}`
	if string(w.B) != want {
		t.Fatalf("got %s want %s", w.B, want)
	}
	w.Reset()
	w.Arr()
	w.Int(1)
	w.Int(2)
	w.EndArr()
	if string(w.B) != "[1,2]" {
		t.Fatalf("after reset got %s", w.B)
	}
}

func FuzzString(f *testing.F) {
	f.Add("hello\n\"")
	f.Add("\xff\xfe")
	f.Fuzz(func(t *testing.T, s string) {
		got := String(nil, s)
		if !json.Valid(got) {
			t.Fatalf("invalid JSON for %q: %s", s, got)
		}
	})
}

func BenchmarkString(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 256)
	s := "The quick brown fox said \"hi\"\nand left."
	for b.Loop() {
		buf = String(buf[:0], s)
	}
}

// reference is the escaper one byte at a time.
func reference(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, `\n`...)
			case c == '\r':
				dst = append(dst, `\r`...)
			case c == '\t':
				dst = append(dst, `\t`...)
			case c < 0x20:
				dst = fmt.Appendf(dst, `\u%04x`, c)
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = fmt.Appendf(dst, `\u%04x`, r)
		default:
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}

// The word-at-a-time scan must find every byte that needs escaping,
// wherever it sits in a word.
func TestString_Words(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte("abc \"\\\n\r\t\x00\x01\x1f\x7f\x80\xff\xe2\x80\xa8\xc3\xa9/<>!~ ")
	for range 20000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			if rng.IntN(3) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = byte(rng.IntN(256))
			}
		}
		s := string(b)
		if got, want := String(nil, s), reference(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: %s, want %s", s, got, want)
		}
		if got, want := Bytes(nil, b), reference(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("bytes %q: %s, want %s", s, got, want)
		}
	}
}

func BenchmarkStringPlain(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 512)
	s := "The quick brown fox jumps over the lazy dog, and then it runs away into the forest to hide."
	for b.Loop() {
		buf = String(buf[:0], s)
	}
}
