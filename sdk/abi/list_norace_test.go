//go:build !race

package abi

import "testing"

// Writing and reading a list allocates nothing (the race detector's
// instrumentation would).
func TestAppendMetaList_Allocs(t *testing.T) {
	dst := make([]byte, 0, 256)
	caps := []string{"completion", "tools", "vision", "thinking"}
	if n := testing.AllocsPerRun(100, func() {
		dst = AppendMetaList(dst[:0], MetaModelCaps, caps)
		if !MetaListHas(dst[4+len(MetaModelCaps)+4:], "thinking") {
			t.Fatal("miss")
		}
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
