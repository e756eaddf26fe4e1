//go:build !race

package pluginhost

import (
	"context"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

func TestVersion_Call_ZeroAllocs(t *testing.T) {
	h := newTestHost(t, plugin("good", "good", "translator", ModeTrusted))
	p := h.Plugin("good")
	ctx := context.Background()
	var out Result
	items := abi.AppendItem(nil, []byte(`{"id":"x","choices":[]}`))
	call := func(op abi.Op, in CallInput) {
		if err := p.Call(ctx, op, in, &out); err != nil {
			t.Fatal(err)
		}
	}
	call(abi.OpErrorEncode, errorInput) // grow out's slices
	call(abi.OpStreamEncode, CallInput{Payload: items})
	if n := testing.AllocsPerRun(500, func() { call(abi.OpErrorEncode, errorInput) }); n != 0 {
		t.Errorf("error_encode: %v allocs per call", n)
	}
	if n := testing.AllocsPerRun(500, func() {
		call(abi.OpStreamEncode, CallInput{Payload: items, State: out.State})
	}); n != 0 {
		t.Errorf("stream_encode with state: %v allocs per call", n)
	}
	if n := testing.AllocsPerRun(500, func() {
		if v := h.Plugin("good").Pin(); v != nil {
			v.Release()
		}
	}); n != 0 {
		t.Errorf("Plugin+Pin+Release: %v allocs", n)
	}
}
