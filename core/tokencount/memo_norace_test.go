//go:build !race

package tokencount

import (
	"context"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/plugcall"
)

// A memo hit allocates nothing (the race detector's instrumentation does).
func TestMemo_HitAllocs(t *testing.T) {
	m := newMemo(16)
	k := memoKey(1)
	m.put(k, Count{Tokens: 5})
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := m.get(k); !ok {
			t.Fatal("miss")
		}
	}); n != 0 {
		t.Errorf("%v allocations per hit", n)
	}
}

// bodyAdapter's count request is a fixed body, built without allocating.
type bodyAdapter []byte

func (b bodyAdapter) CountRequest() (plugcall.BackendRequest, error) {
	return plugcall.BackendRequest{Method: "POST", Path: "/tokenize", ContentType: "application/json", Body: b}, nil
}

func (bodyAdapter) CountResponse([]byte) (Count, error) { return Count{Tokens: 1}, nil }

// An answer from the memo allocates nothing in Exact.
func TestExact_HitAllocs(t *testing.T) {
	b, n := countBackend(t, func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("{}") })
	c := New(16)
	var a Adapter = bodyAdapter(`{"model":"m"}`)
	if _, err := c.Exact(context.Background(), b, "m", "r1", a); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		if v, err := c.Exact(context.Background(), b, "m", "r1", a); err != nil || v.Tokens != 1 {
			t.Fatal(v, err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per hit", allocs)
	}
	if n.Load() != 1 {
		t.Errorf("asked %d times", n.Load())
	}
}
