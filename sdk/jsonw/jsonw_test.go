package jsonw

import (
	"encoding/json"
	"math"
	"testing"
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
