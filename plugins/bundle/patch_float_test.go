package bundle

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fastjson/fastfloat"

	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// TestShortestFloat holds the copy in optFloat to what the full path
// writes: every text shortestFloat accepts is jsonw.Float of its value,
// and texts jsonw would write differently are refused.
func TestShortestFloat(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"0", true}, {"1", true}, {"2", true}, {"0.7", true}, {"-0.5", true}, {"1.25", true},
		{"0.000001", true}, {"123456789012345", true}, {"0.123456789012345", true},
		{"1.00", false}, {"0.0", false}, {"-0", false}, {"-0.0", false}, {"00.5", false}, {"01", false},
		{"1e2", false}, {"1E-3", false}, {"0.0000001", false}, {"1234567890123456", false},
		{"0.1234567890123456", false}, {".5", false}, {"5.", false}, {"", false}, {"-", false}, {"1.5e0", false},
	} {
		if got := shortestFloat([]byte(c.text)); got != c.want {
			t.Errorf("shortestFloat(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	accepted := 0
	for range 200000 {
		var text string
		switch r.IntN(4) {
		case 0:
			text = digits(1 + r.IntN(17))
		case 1:
			text = digits(1+r.IntN(3)) + "." + digits(1+r.IntN(16))
		case 2:
			text = "0." + strings.Repeat("0", r.IntN(8)) + digits(1+r.IntN(15))
		default:
			text = strconv.FormatFloat(r.Float64()*4-2, 'f', r.IntN(18), 64)
		}
		if r.IntN(3) == 0 {
			text = "-" + text
		}
		if !shortestFloat([]byte(text)) {
			continue
		}
		accepted++
		f, err := fastfloat.Parse(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if g, _ := strconv.ParseFloat(text, 64); g != f {
			t.Fatalf("%q: fastfloat %v, strconv %v", text, f, g)
		}
		if w := string(jsonw.Float(nil, f)); w != text {
			t.Fatalf("shortestFloat(%q) accepted it, but jsonw.Float writes %q", text, w)
		}
	}
	if accepted < 50000 {
		t.Fatalf("only %d of 200000 generated texts accepted: the generator no longer tests the copy", accepted)
	}
}
