package server

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/plugcall"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// gatedTranslator's error encoding, once armed, holds its instance until
// gate closes (the plugin's load calls it too).
type gatedTranslator struct {
	sdk.Unimplemented
	armed *atomic.Bool
	gate  chan struct{}
}

func (g gatedTranslator) EncodeError(_ *sdk.Call, _ *canon.Error, out *sdk.Output) error {
	if g.armed.Load() {
		<-g.gate
	}
	out.Body = append(out.Body[:0], "{}"...)
	return nil
}

// A streaming relay's plugin calls run under s.streamCtx: with every
// instance busy for longer than pool.wait_ms (1 s), such a call waits
// for one instead of failing with "no free plugin instance" (which
// would cut a stream already streaming).
func TestServer_StreamCallsOutwaitThePool(t *testing.T) {
	s := newTestServer(t, nil)
	gate, armed := make(chan struct{}), new(atomic.Bool)
	p := translator(t, "gated", gatedTranslator{armed: armed, gate: gate}, chatPOST)
	v := p.Pin()
	defer v.Release()
	armed.Store(true)
	max := runtime.GOMAXPROCS(0) + 1 // pool.max's default
	ce := canon.Error{Status: 502, Code: "x", Message: "x"}
	var wg sync.WaitGroup
	for range max {
		wg.Go(func() {
			var c plugcall.Calls
			var out plugcall.EncodedError
			_ = c.EncodeError(context.Background(), v, &ce, false, nil, &out)
		})
	}
	testutil.WaitFor(t, "every instance busy", 10*time.Second, func() bool {
		st := v.Stats()
		return st.Live == max && st.Idle == 0
	})
	errc := make(chan error, 1)
	go func() {
		var c plugcall.Calls
		var out plugcall.EncodedError
		errc <- c.EncodeError(s.streamCtx, v, &ce, false, nil, &out)
	}()
	select {
	case err := <-errc:
		t.Fatalf("returned while every instance was busy: %v", err)
	case <-time.After(1300 * time.Millisecond): // past pool.wait_ms
	}
	close(gate)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}
