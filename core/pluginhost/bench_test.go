package pluginhost

import (
	"context"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/testdata/broken/goodlib"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// BenchmarkCall measures one small op (error_encode: ~60 B of canonical
// JSON in, ~30 B out) through the whole host path: pool get, input copy,
// guest call, result copy, pool put, metrics. native is the same plugin
// code compiled into the host: the difference is the WebAssembly tax.
func BenchmarkCall(b *testing.B) {
	for _, mode := range []string{"trusted", "strict", "native"} {
		b.Run(mode, func(b *testing.B) {
			var p *Plugin
			if mode == "native" {
				p = NewNativePlugin("good", goodlib.NewPlugin)
			} else {
				h := newTestHost(b, plugin("good", "good", "translator", Mode(mode)))
				p = h.Plugin("good")
			}
			v := p.Pin()
			defer v.Release()
			ctx := context.Background()
			var out Result
			b.ReportAllocs()
			for b.Loop() {
				if err := v.Call(ctx, abi.OpErrorEncode, errorInput, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCall_Parallel is BenchmarkCall with GOMAXPROCS goroutines.
func BenchmarkCall_Parallel(b *testing.B) {
	h := newTestHost(b, plugin("good", "good", "translator", ModeTrusted))
	p := h.Plugin("good")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var out Result
		for pb.Next() {
			if err := p.Call(context.Background(), abi.OpErrorEncode, errorInput, &out); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkPoolGetPut(b *testing.B) {
	h := newTestHost(b, plugin("good", "good", "translator", ModeTrusted))
	v := h.Plugin("good").Pin()
	defer v.Release()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		in, err := v.pool.get(ctx)
		if err != nil {
			b.Fatal(err)
		}
		v.pool.put(in, false)
	}
}

// BenchmarkInstantiate measures creating an instance (instantiate,
// _initialize, mr_abi_version, mr_init) and closing it: the slow path a
// pool avoids.
func BenchmarkInstantiate(b *testing.B) {
	for _, mode := range []Mode{ModeTrusted, ModeStrict} {
		b.Run(string(mode), func(b *testing.B) {
			h := newTestHost(b, plugin("good", "good", "translator", mode))
			v := h.Plugin("good").Pin()
			defer v.Release()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				in, err := v.newInstance(ctx)
				if err != nil {
					b.Fatal(err)
				}
				in.close()
			}
		})
	}
}
