package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// attemptTimeout bounds one streamed attempt's wait for the backend's
// response headers; when it passes and the request has time left, the
// attempt fails over to another backend. A later config key
// timeouts.attempt should set it (a variable only so that tests can
// shorten it). A non-streamed response's headers come with its whole
// body, so its attempt is bounded by timeouts.request alone: a long
// generation is not a dead backend.
var attemptTimeout = 60 * time.Second

// errAttemptTimeout is the cause of a streamed attempt's context ending
// at attemptTimeout. It is a net.Error timeout, so that a request whose
// attempts all timed out answers 504 backend_timeout.
var errAttemptTimeout error = attemptTimeoutError{}

type attemptTimeoutError struct{}

func (attemptTimeoutError) Error() string {
	return "the backend sent no response headers within the attempt timeout"
}
func (attemptTimeoutError) Timeout() bool   { return true }
func (attemptTimeoutError) Temporary() bool { return true }

// retryableStatus reports whether a backend's answer, before any byte of
// it went to the client, is a server failure worth another backend: 500
// (the engine failed), 502, 503 and 504. A 4xx is the request's fault and
// would fail anywhere; it is never retried.
func retryableStatus(code int) bool {
	switch code {
	case fasthttp.StatusInternalServerError, fasthttp.StatusBadGateway,
		fasthttp.StatusServiceUnavailable, fasthttp.StatusGatewayTimeout:
		return true
	}
	return false
}

// retryable: the call failed before the backend answered, in a way that
// another backend may not: refused, reset, closed, or a stream's
// attemptTimeout passed while the request has time left (the request's
// own timeout and the client's cancellation are handled before this is
// asked). Another timeout (a read timing out) is not retried: the backend
// may have the request and be generating, and a second backend would
// double the work.
func retryable(err error) bool {
	if errors.Is(err, errAttemptTimeout) {
		return true
	}
	return !errors.Is(err, fasthttp.ErrTimeout) && !isTimeout(err) && !errors.Is(err, context.Canceled) &&
		!errors.Is(err, fasthttp.ErrBodyTooLarge)
}

// liveFailure reports whether a failed call counts against the backend's
// circuit breaker: any failure but the client's cancellation and a body
// over the size limit (an answer, too big for us).
func liveFailure(err error) bool {
	return !errors.Is(err, context.Canceled) && !errors.Is(err, fasthttp.ErrBodyTooLarge)
}

// streamCall waits for a stream's response headers within attemptTimeout
// (or the request's deadline when sooner: then no timer is made).
func (ex *exchange) streamCall(b *backend.Backend) error {
	ctx := ex.ctx
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > attemptTimeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ex.ctx, attemptTimeout, errAttemptTimeout)
		defer cancel()
	}
	err := b.DoStreamContext(ctx, ex.breq, ex.bresp)
	if err != nil && ex.ctx.Err() == nil && context.Cause(ctx) == errAttemptTimeout {
		return fmt.Errorf("%w: %w", errAttemptTimeout, err)
	}
	return err
}

// discardResponse drops a failed attempt's response (closing a stream's
// body, which closes its connection) before another attempt reuses it.
func (ex *exchange) discardResponse() {
	if ex.req.Stream {
		_ = ex.bresp.CloseBodyStream()
	}
	ex.bresp.Reset()
}

// errNoBackendLeft answers a request whose admitted backend's breaker
// refused it (its one half-open probe taken meanwhile) and that has
// nowhere else to go.
func errNoBackendLeft(name string) error {
	e := apierr.New(canon.ErrOverloaded, "backend_unavailable", "the backend "+name+" is failing; no other backend can serve the request")
	e.Status, e.RetryAfter = fasthttp.StatusServiceUnavailable, 2
	return e
}
