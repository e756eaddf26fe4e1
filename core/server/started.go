package server

import (
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/outcome"
)

// starters are the observers that are also told at admission.
func starters(obs []outcome.Observer) []outcome.Starter {
	var out []outcome.Starter
	for _, o := range obs {
		if st, ok := o.(outcome.Starter); ok {
			out = append(out, st)
		}
	}
	return out
}

// noteStarted tells the starters (the audit) that the request holds a
// backend slot, before its backend call: what is known now (who, what,
// where, the decision, the stages so far) is recorded, so that a request
// the gateway never finishes still leaves a row. The finish's Observe
// completes it.
func (ex *exchange) noteStarted() {
	if len(ex.s.starters) == 0 {
		return
	}
	o := &ex.out
	ex.fillKnown()
	// The admission stage's time is recorded when the stage returns, so
	// the started row has no queue time yet; its fairness delay, a part
	// of that time, waits for the finished row too (the decision has it).
	fair := o.FairnessDelay
	o.Duration, o.FairnessDelay = time.Since(ex.start), 0
	for _, st := range ex.s.starters {
		st.Started(o)
	}
	o.Duration, o.FairnessDelay = 0, fair
}

// maxPanicText bounds the panic value recorded in the outcome's error.
const maxPanicText = 200

// observePanic tells the observers about a request whose handler
// panicked (recoverPanic has written the 500): what was known, with
// Panicked set, so that the audit's row ends as a panic instead of
// staying started. The exchange is not pooled again, so its state is
// only read.
func (s *Server) observePanic(ctx *fasthttp.RequestCtx, ex *exchange, r any) {
	if len(s.observers) == 0 {
		return
	}
	o := &ex.out
	o.Status, o.Panicked, o.ErrorCode = fasthttp.StatusInternalServerError, true, "internal_error"
	msg := fmt.Sprint(r)
	if len(msg) > maxPanicText {
		msg = msg[:maxPanicText]
	}
	o.Error = "panic: " + msg
	o.Duration = time.Since(ex.start)
	ex.fillAudit(ctx)
	for _, obs := range s.observers {
		obs.Observe(o)
	}
}
