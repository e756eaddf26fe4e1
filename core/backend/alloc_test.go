//go:build !race

package backend

import (
	"context"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func TestBackend_FastPathsDoNotAllocate(t *testing.T) {
	r := testRegistry(t)
	a := r.Backend("a")
	setStatus(a, true, "m")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if n := testing.AllocsPerRun(100, func() {
		_ = a.AcquireContext(ctx, time.Second)
		a.Release()
	}); n != 0 {
		t.Errorf("AcquireContext with a free slot allocates %v", n)
	}
	if n := testing.AllocsPerRun(100, func() { r.Serving() }); n != 0 {
		t.Errorf("Serving allocates %v", n)
	}
}

// DoContext costs what Do does plus context.AfterFunc's two allocations
// (its callback context and stop func), none with an EndNotifier; the
// rest of its state is pooled.
func TestBackend_DoContextAllocations(t *testing.T) {
	be := backendAt(t, "http://"+startFastBackend(t), "10s")
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(be.URL("/v1/chat/completions"))
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetBodyString(`{"model":"m"}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	check := func(err error) {
		if err != nil || resp.StatusCode() != 200 {
			t.Fatal(resp.StatusCode(), err)
		}
	}
	do := testing.AllocsPerRun(200, func() { check(be.Do(req, resp, 5*time.Second)) })
	withCtx := testing.AllocsPerRun(200, func() { check(be.DoContext(ctx, req, resp, 5*time.Second)) })
	if withCtx > do+2 {
		t.Errorf("DoContext allocates %v per call, Do %v", withCtx, do)
	}
	// A context that is an EndNotifier (the gateway's request context)
	// saves context.AfterFunc's two.
	nctx := newNotifyCtx()
	defer nctx.cancel()
	withNotifier := testing.AllocsPerRun(200, func() { check(be.DoContext(nctx, req, resp, 5*time.Second)) })
	if withNotifier > do {
		t.Errorf("DoContext with an EndNotifier allocates %v per call, Do %v", withNotifier, do)
	}
	t.Logf("allocations per call: Do %v, DoContext %v, with an EndNotifier %v", do, withCtx, withNotifier)
}
