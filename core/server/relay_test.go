package server

import (
	"testing"

	"github.com/mindrouter/mindrouter/core/outcome"
)

// TestRelayBody_ClosedUnwritten: when fasthttp never writes a stream's
// body (the client left before the response went out) and closes it, the
// exchange is finished once, as a client disconnect, and a later WriteTo
// or Close does nothing.
func TestRelayBody_ClosedUnwritten(t *testing.T) {
	s := newTestServer(t, nil)
	var got []outcome.Outcome
	s.observers = []outcome.Observer{outcome.ObserverFunc(func(o *outcome.Outcome) { got = append(got, *o) })}
	ex := newEx(s, nil)
	ex.setRoute(chatRoute(nil))
	reqCtx := ex.ctx
	s.met.streams.Add(1) // as startStream counts it
	b := &relayBody{ex: ex}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].ClientGone || got[0].Status != statusClientClosed {
		t.Fatalf("observers saw %+v", got)
	}
	if n := s.met.streams.Load(); n != 0 {
		t.Fatalf("open streams %d", n)
	}
	if n := s.met.disconnects.Load(); n != 1 {
		t.Fatalf("disconnects %d", n)
	}
	if reqCtx.Err() == nil {
		t.Fatal("the request's context is not cancelled")
	}
	if n, err := b.WriteTo(nil); n != 0 || err == nil {
		t.Fatalf("WriteTo after Close: %d, %v", n, err)
	}
	_ = b.Close()
	if len(got) != 1 {
		t.Fatalf("finished %d times", len(got))
	}
}
