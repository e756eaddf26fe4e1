//go:build !race

package jsonscan

import (
	"strings"
	"testing"
)

// Allocation counts are checked without the race detector only, which
// changes them.

// Scan allocates nothing on valid bodies (escaped keys and markers matched included),
// nor do the readers of its values; a refusal costs its *Error.
func TestScanAllocs(t *testing.T) {
	bodies := [][]byte{
		[]byte(`{"mo\u0064el":"q\u0077en","stream":true,"max_tokens":1e3,"options":{"num_predict":-1},"stream_options":{"include_usage":true}}`),
		[]byte(`{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`),
	}
	for _, bb := range benchBodies {
		bodies = append(bodies, bb.body())
	}
	bodies = append(bodies, []byte(`{"messages":[{"content":[{"t\u0079pe":"image\u005furl"}]}],"tools":[1],"response_format":{"type":"json_sch\u0065ma"}}`))
	var res Result
	buf := make([]byte, 0, 64)
	for _, body := range bodies {
		if n := testing.AllocsPerRun(20, func() {
			if err := Scan(body, routeSpec, benchLimits, &res); err != nil {
				t.Fatal(err)
			}
			if err := Scan(body, needsSpec, benchLimits, &res); err != nil {
				t.Fatal(err)
			}
			if v, ok := res.Get(0); ok {
				buf, _ = AppendString(buf[:0], body, v)
				_ = HasControl(buf)
			}
			if v, ok := res.Get(3); ok {
				_, _ = v.Int(body)
			}
		}); n != 0 {
			t.Errorf("%.40s: %v allocs", body, n)
		}
	}
	if n := testing.AllocsPerRun(20, func() { _ = Scan(bodies[1], nil, Limits{MaxDepth: 3}, &res) }); n > 1 {
		t.Errorf("refusal: %v allocs", n) // the *Error
	}
	// A fresh Result holds 1024 levels.
	deep1024 := []byte(`{"a":` + strings.Repeat("[", 1023) + strings.Repeat("]", 1023) + `}`)
	if n := testing.AllocsPerRun(20, func() {
		var r Result
		if err := Scan(deep1024, nil, Limits{MaxDepth: 1024}, &r); err != nil || r.Depth != 1024 {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("1024 deep: %v allocs", n)
	}
	// The stack grown for a deep body is kept in a reused Result.
	deep := []byte(`{"a":`)
	for range 5000 {
		deep = append(deep, '[')
	}
	for range 5000 {
		deep = append(deep, ']')
	}
	deep = append(deep, '}')
	if n := testing.AllocsPerRun(20, func() { _ = Scan(deep, nil, Limits{}, &res) }); n != 0 {
		t.Errorf("deep: %v allocs", n)
	}
}
