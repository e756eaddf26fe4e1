package pluginhost

import (
	"bytes"
	"context"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/testdata/broken/goodlib"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

func TestNewNativePlugin(t *testing.T) {
	goodlib.Version = "A" // as the wasm build "good" was linked
	native := NewNativePlugin("good", goodlib.NewPlugin)
	if err := native.LastError(); err != nil {
		t.Fatal(err)
	}
	h := newTestHost(t, plugin("good", "good", "translator", ModeTrusted))
	wasm := h.Plugin("good")
	if native.Manifest().Name != "good" || native.Manifest().Kind != wasm.Manifest().Kind {
		t.Fatalf("manifest %+v", native.Manifest())
	}
	var a, b Result
	items := abi.AppendItem(nil, []byte(`{"id":"x","choices":[]}`))
	for _, c := range []struct {
		op abi.Op
		in CallInput
	}{
		{abi.OpErrorEncode, errorInput},
		{abi.OpRequestDecode, decode("m")},
		{abi.OpRequestDecode, CallInput{}},
		{abi.OpStreamEncode, CallInput{Flags: abi.FlagFirst, Payload: items}},
	} {
		errA := native.Call(context.Background(), c.op, c.in, &a)
		errB := wasm.Call(context.Background(), c.op, c.in, &b)
		if (errA == nil) != (errB == nil) || a.Status != b.Status || !bytes.Equal(a.Payload, b.Payload) ||
			!bytes.Equal(a.State, b.State) || !bytes.Equal(a.Meta, b.Meta) {
			t.Errorf("%s: native %+v (%v) != wasm %+v (%v)", c.op, a, errA, b, errB)
		}
	}
}
