//go:build !race

package server

import "testing"

// A memo hit allocates nothing (the race detector's instrumentation does).
func TestCountMemo_HitAllocs(t *testing.T) {
	m := newCountMemo(16)
	k := memoKey(1)
	m.put(k, vllmCount{count: 5})
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := m.get(k); !ok {
			t.Fatal("miss")
		}
	}); n != 0 {
		t.Errorf("%v allocations per hit", n)
	}
}
