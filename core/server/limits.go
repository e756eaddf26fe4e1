package server

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/quota"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Limiter enforces each user's quotas — requests per minute, requests in
// flight, token budget — before a request costs anything (core/quota).
type Limiter interface {
	// Admit counts the request against its user's limits; the Ticket (nil
	// when nothing is limited) must be Done when the request ends.
	Admit(ctx context.Context, p *auth.Principal) (Ticket, error)
}

// Ticket is one admitted request's hold on its user's quotas.
type Ticket interface {
	// Reserve takes between min and want tokens of the budget.
	Reserve(ctx context.Context, min, want int64) (granted int64, err error)
	// Done settles the reservation with the tokens used and frees the slot.
	Done(used int64)
	Status() quota.Status
}

// NoLimits admits everything.
type NoLimits struct{}

// Admit implements Limiter.
func (NoLimits) Admit(context.Context, *auth.Principal) (Ticket, error) { return nil, nil }

// limitStage asks the Limiter and sends the OpenAI rate-limit headers
// (x-ratelimit-*) for the limits the user has, on answers and refusals
// alike.
type limitStage struct{ l Limiter }

func (limitStage) stage() outcome.Stage { return outcome.StageLimit }

func (l limitStage) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	t, err := l.l.Admit(ex.ctx, &ex.principal)
	if err != nil {
		var d *quota.Denied
		if errors.As(err, &d) {
			rateHeaders(&ctx.Response.Header, &ex.principal.Limits, &d.Status)
			return denied(d)
		}
		return err
	}
	ex.ticket = t
	if t != nil {
		st := t.Status()
		rateHeaders(&ctx.Response.Header, &ex.principal.Limits, &st)
	}
	return nil
}

// denied is a quota refusal in the client's dialect: 429 with Retry-After
// (503 when the quota store is unreachable and quota.redis_down is closed).
func denied(d *quota.Denied) error {
	var e *apierr.Error
	switch d.Kind {
	case "unavailable":
		e = apierr.Wrap(canon.ErrOverloaded, "quota_unavailable", d.Msg, d)
	case "tokens":
		e = apierr.Wrap(canon.ErrRateLimit, "insufficient_quota", d.Msg, d)
	case "concurrency":
		e = apierr.Wrap(canon.ErrRateLimit, "concurrency_limit_exceeded", d.Msg, d)
	default:
		e = apierr.Wrap(canon.ErrRateLimit, "rate_limit_exceeded", d.Msg, d)
	}
	e.RetryAfter = int((d.RetryAfter + time.Second - 1) / time.Second)
	if e.RetryAfter < 1 {
		e.RetryAfter = 1
	}
	return e
}

// reserveTokens reserves the request's estimated input and its output cap
// from a budgeted user's tokens, and caps the output to what the
// reservation covers (abi.MetaMaxOutput): a stream ends cleanly, with the
// finish reason "length", where the budget ends, instead of running past
// it. A request without max_tokens reserves quota.default_max_tokens.
// The cap applies to each choice, so a request for n choices reserves n
// times the output and gets the reservation's output divided by n: at
// least one token each, or a refusal when the budget cannot cover that.
func (ex *exchange) reserveTokens(ctx *fasthttp.RequestCtx, unary bool) error {
	if ex.ticket == nil || ex.principal.Limits.TokenBudget <= 0 {
		return nil
	}
	est := inputEstimate(ex.body)
	ex.estIn = est
	want, min := est, est
	choices := int64(max(ex.req.Choices, 1))
	if !unary {
		out := int64(ex.req.MaxTokens)
		if out <= 0 {
			out = int64(ex.s.cfg.Quota.DefaultMaxTokens)
		}
		want, min = est+choices*out, est+choices
	}
	granted, err := ex.ticket.Reserve(ex.ctx, min, want)
	st := ex.ticket.Status()
	rateHeaders(&ctx.Response.Header, &ex.principal.Limits, &st)
	if err != nil {
		var d *quota.Denied
		if errors.As(err, &d) {
			return denied(d)
		}
		return err
	}
	if !unary && (granted < want || ex.req.MaxTokens <= 0) {
		ex.maxOutput = int((granted - est) / choices)
	}
	return nil
}

// usedTokens is what the request cost its user's budget: its usage, the
// backend's or estimated (estimateUsage).
func (ex *exchange) usedTokens() int64 {
	ex.estimateUsage()
	u := &ex.out.Usage
	return int64(u.Prompt + u.Completion)
}

// estimateUsage gives an answer that ends without the backend's usage —
// the client hung up, the backend dropped the stream, a plugin failed —
// estimated figures, once a response began or output was decoded: the
// input estimate and the adapters' estimate of the output decoded, every
// choice's deltas (abi.MetaOutputTokens, about a token per delta). The
// quota charges them and the audit records them (Reported stays false:
// tokens_estimated), so the two agree with what was delivered. Nothing
// began: nothing is charged. It may run more than once.
func (ex *exchange) estimateUsage() {
	u := &ex.out.Usage
	if u.Reported || ex.out.Attempts == 0 {
		return
	}
	if ex.out.Chunks == 0 && ex.out.Status != fasthttp.StatusOK && ex.outEst == 0 {
		return
	}
	if ex.estIn == 0 {
		ex.estIn = inputEstimate(ex.body)
	}
	out := ex.outEst
	if out == 0 {
		// A plugin built before the SDK estimated output reports none:
		// a token per batch relayed, as the gateway charged before.
		out = int64(ex.out.Chunks)
	}
	u.Prompt, u.Completion = int(ex.estIn), int(out)
}

// rateHeaders writes OpenAI's rate-limit headers for the limits l has.
func rateHeaders(h *fasthttp.ResponseHeader, l *auth.Limits, st *quota.Status) {
	var b [24]byte
	if l.RPM > 0 {
		h.SetBytesV("x-ratelimit-limit-requests", strconv.AppendInt(b[:0], int64(st.LimitRequests), 10))
		h.SetBytesV("x-ratelimit-remaining-requests", strconv.AppendInt(b[:0], int64(max(st.RemainingRequests, 0)), 10))
		h.SetBytesV("x-ratelimit-reset-requests", appendResetDuration(b[:0], st.ResetRequests))
	}
	if l.TokenBudget > 0 {
		h.SetBytesV("x-ratelimit-limit-tokens", strconv.AppendInt(b[:0], st.LimitTokens, 10))
		h.SetBytesV("x-ratelimit-remaining-tokens", strconv.AppendInt(b[:0], max(st.RemainingTokens, 0), 10))
		h.SetBytesV("x-ratelimit-reset-tokens", appendResetDuration(b[:0], st.ResetTokens))
	}
}

// appendResetDuration writes d as OpenAI does ("250ms", "17s", "6m0s"
// becomes "360s"): Go's time.ParseDuration reads every form.
func appendResetDuration(b []byte, d time.Duration) []byte {
	if d < 0 {
		d = 0
	}
	if d < time.Second {
		return append(strconv.AppendInt(b, int64(d/time.Millisecond), 10), "ms"...)
	}
	return append(strconv.AppendInt(b, int64((d+time.Second-1)/time.Second), 10), 's')
}
