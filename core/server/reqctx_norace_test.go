//go:build !race

package server

import (
	"context"
	"testing"
	"time"
)

// A request's context costs one allocation (the reqCtx itself): its
// deadline timer is the pooled exchange's, the live set links it in
// place, and a backend call's hook goes in its inline slots.
func TestReqCtx_OneAllocation(t *testing.T) {
	s := reqCtxServer(t, context.Background(), time.Hour)
	ex := newExchange()
	ex.begin(s, nil)
	ex.releaseHeld()
	hook := func() {}
	n := testing.AllocsPerRun(1000, func() {
		d := s.cfg.Timeouts.Request.D()
		c := newReqCtx(s.requestValues(), time.Now().Add(d))
		ex.ctx = c
		ex.rc.Store(c)
		s.live.add(c)
		ex.armDeadline(d)
		id, _ := c.OnEnd(hook)
		c.Unhook(id)
		ex.releaseHeld()
	})
	if n != 1 {
		t.Fatalf("a request's context allocates %v times, want 1", n)
	}
}
