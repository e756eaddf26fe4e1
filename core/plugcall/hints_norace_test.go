//go:build !race

package plugcall

import "testing"

// The hints' meta allocates nothing once the buffer has grown (the race
// detector's instrumentation would).
func TestAppendHints_Allocs(t *testing.T) {
	caps := []string{"completion", "tools", "vision"}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(50, func() { buf = appendHints(buf[:0], Hints{ContextLength: 8192, Caps: caps, ThinkDefault: "off"}) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
