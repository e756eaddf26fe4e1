package canon

import "testing"

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
