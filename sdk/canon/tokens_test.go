package canon

import (
	"math"
	"testing"
)

func TestTokenCountRoundTrip(t *testing.T) {
	for _, in := range []TokenCount{{}, {Count: 12, MaxModelLen: 32768, Estimate: true}, {Count: 1 << 30}} {
		var out TokenCount
		if err := out.DecodeJSON(in.AppendJSON(nil)); err != nil || out != in {
			t.Fatalf("%+v → %s → %+v (%v)", in, in.AppendJSON(nil), out, err)
		}
	}
	var x TokenCount
	if err := x.DecodeJSON([]byte(`{"count":"7"}`)); err == nil {
		t.Fatal("a string count decoded")
	}
}

// Vectors travel as base64 float32s; the number form still reads, and
// non-finite values become zero.
func TestEmbeddingVectors(t *testing.T) {
	in := EmbeddingResponse{Model: "m", Vectors: [][]float32{{0.1, -2.5, 1e-7, float32(math.Inf(1))}, {}, {3}}}
	var out EmbeddingResponse
	if err := out.DecodeJSON(in.AppendJSON(nil)); err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{0.1, -2.5, 1e-7, 0}, nil, {3}}
	if len(out.Vectors) != 3 {
		t.Fatalf("%v", out.Vectors)
	}
	for i := range want {
		if len(out.Vectors[i]) != len(want[i]) {
			t.Fatalf("vector %d: %v", i, out.Vectors[i])
		}
		for j := range want[i] {
			if out.Vectors[i][j] != want[i][j] {
				t.Fatalf("vector %d: %v", i, out.Vectors[i])
			}
		}
	}
	if err := out.DecodeJSON([]byte(`{"vectors":[[0.5,null]]}`)); err != nil || out.Vectors[0][0] != 0.5 || out.Vectors[0][1] != 0 {
		t.Fatalf("number form: %v %v", out.Vectors, err)
	}
}
