package tokencount

import (
	"crypto/sha256"
	"strconv"
	"sync"
	"testing"
	"time"
)

func memoKey(i int) countKey {
	return countKey{backend: "b", model: "m", sum: sha256.Sum256([]byte(strconv.Itoa(i)))}
}

func TestMemo_Bounded(t *testing.T) {
	m := newMemo(4)
	for i := range 4 {
		m.put(memoKey(i), Count{Tokens: i})
	}
	// Entry 0 is hit: the next insertion evicts 1, the oldest not hit.
	if v, ok := m.get(memoKey(0)); !ok || v.Tokens != 0 {
		t.Fatalf("get 0 = %v %v", v, ok)
	}
	m.put(memoKey(4), Count{Tokens: 4})
	if _, ok := m.get(memoKey(1)); ok {
		t.Error("1 survived, though it was the oldest not hit")
	}
	for _, i := range []int{0, 2, 3, 4} {
		if v, ok := m.get(memoKey(i)); !ok || v.Tokens != i {
			t.Errorf("get %d = %v %v", i, v, ok)
		}
	}
	// Everything hit: one lap clears the bits, then the hand evicts.
	for i := 5; i < 50; i++ {
		m.put(memoKey(i), Count{Tokens: i})
	}
	if n := m.len(); n != 4 {
		t.Errorf("len = %d, want the bound 4", n)
	}
	if v, ok := m.get(memoKey(49)); !ok || v.Tokens != 49 {
		t.Errorf("the newest entry: %v %v", v, ok)
	}
	// A key differs by backend or model as by body.
	k := memoKey(49)
	k.backend = "other"
	if _, ok := m.get(k); ok {
		t.Error("another backend's count was found")
	}
	m.put(memoKey(49), Count{Tokens: 7})
	if v, _ := m.get(memoKey(49)); v.Tokens != 7 {
		t.Errorf("update: %v", v)
	}
}

func TestMemo_Concurrent(t *testing.T) {
	m := newMemo(64)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				k := memoKey((g*31 + i) % 200)
				if v, ok := m.get(k); ok && v.Tokens != (g*31+i)%200 {
					t.Errorf("key %d holds %d", (g*31+i)%200, v.Tokens)
					return
				}
				m.put(k, Count{Tokens: (g*31 + i) % 200})
			}
		}()
	}
	wg.Wait()
	if n := m.len(); n != 64 {
		t.Errorf("len = %d, want 64", n)
	}
}

func TestMemo_BackOff(t *testing.T) {
	m := newMemo(4)
	now := time.Now()
	if !m.usable("b", now) {
		t.Fatal("a fresh backend is not usable")
	}
	m.backOff("b", now.Add(time.Minute))
	if m.usable("b", now.Add(59*time.Second)) || !m.usable("other", now) {
		t.Error("the back-off does not hold, or holds for another backend")
	}
	if !m.usable("b", now.Add(time.Minute)) || len(m.until) != 0 {
		t.Errorf("after the back-off: still off, or %d entries kept", len(m.until))
	}
}
