package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// errAttemptTimeout is the cause of a streamed attempt's context ending
// at retries.attempt_timeout. It is a net.Error timeout, so that a request
// whose attempts all timed out answers 504 backend_timeout.
var errAttemptTimeout error = attemptTimeoutError{}

type attemptTimeoutError struct{}

func (attemptTimeoutError) Error() string {
	return "the backend sent no stream event within the attempt timeout"
}
func (attemptTimeoutError) Timeout() bool   { return true }
func (attemptTimeoutError) Temporary() bool { return true }

// tried is what one attempt came to, as the retry decision sees it
// (attempt.try fills it).
type tried struct {
	backend   string // the backend's name, for the client's answer
	attempts  int    // attempts made, this one included
	max       int    // retries.max_attempts
	encodeErr error  // the backend request could not be written: nothing was sent
	err       error  // the call failed before the backend answered
	status    int    // the backend's status, when it answered (err nil)
	stream    bool   // a streamed request: its 200's breaker report waits for the stream's end
	// reqErr is the request context's error after a failed call:
	// Canceled (the client left), DeadlineExceeded (timeouts.request).
	reqErr error
	sent   bool // some byte of the answer reached the client
	// alternative: a routable backend this request has not tried serves
	// its model (asked only of a retryable status).
	alternative bool
}

// retryVerdict is the retry decision on one attempt.
type retryVerdict struct {
	again  bool          // make another attempt, on another backend
	report breakerReport // what the backend's circuit breaker is told of this attempt
	why    string        // the reason, for the tests
	// err is the client's answer when the request ends with this
	// attempt — not made again, or no other backend to be had; nil: the
	// backend's own answer is relayed (respond).
	err error
}

// Why a verdict is what it is.
const (
	whyAnswered    = "the backend answered"
	whyNotWritten  = "the backend request could not be written"
	whyClientGone  = "the client left"
	whyDeadline    = "the request timeout passed"
	whySent        = "the client has part of the answer"
	whyLastAttempt = "retries.max_attempts reached"
	whyNoOther     = "no other backend serves the model"
	whyNotRetried  = "a failure another backend would repeat or double"
	whyServerError = "the backend answered a server error"
	whyCallFailed  = "the call failed before the backend answered"
)

// verdict decides whether a failed attempt is made again, why, and what
// the backend's breaker is told; it reads only t. Nothing is tried again
// once a byte reached the client, after retries.max_attempts attempts,
// past the request's deadline or when the client left, and never for a
// 4xx (retryableStatus) or a failure that another backend would repeat
// or double (retryable).
func (t *tried) verdict() retryVerdict {
	if t.encodeErr != nil {
		// The request's own failing (a 400, a plugin's) or an adapter
		// gone since admission: the backend was not asked.
		return retryVerdict{report: reportAbandoned, why: whyNotWritten, err: t.encodeErr}
	}
	if t.err == nil {
		if !retryableStatus(t.status) {
			v := retryVerdict{report: reportSuccess, why: whyAnswered}
			if t.stream && t.status == fasthttp.StatusOK {
				v.report = reportNone // the relay reports how the stream went (relay.go)
			}
			return v
		}
		v := retryVerdict{report: reportFailure} // err nil: respond relays the backend's error
		switch {
		case t.sent:
			v.why = whySent
		case t.attempts >= t.max:
			v.why = whyLastAttempt
		case !t.alternative:
			// Kept for the client rather than dropped for an admission that
			// would come back to the same backend.
			v.why = whyNoOther
		default:
			v.again, v.why = true, whyServerError
			v.err = apierr.New(canon.ErrBackend, "backend_error", "the backend "+t.backend+" answered HTTP "+strconv.Itoa(t.status))
		}
		return v
	}
	switch {
	case t.reqErr == context.Canceled:
		return retryVerdict{report: reportAbandoned, why: whyClientGone, err: errClientGone(t.err)}
	case t.reqErr != nil: // timeouts.request passed
		return retryVerdict{report: reportFailure, why: whyDeadline,
			err: apierr.Wrap(canon.ErrTimeout, "backend_timeout", "the backend "+t.backend+" did not answer within the request timeout", t.err)}
	}
	v := retryVerdict{report: reportAbandoned, err: backendUnreachable(t.backend, t.err)}
	if liveFailure(t.err) {
		v.report = reportFailure
	}
	switch {
	case t.sent:
		v.why = whySent
	case t.attempts >= t.max:
		v.why = whyLastAttempt
	case !retryable(t.err):
		v.why = whyNotRetried
	default:
		v.again, v.why = true, whyCallFailed
	}
	return v
}

// breakerReport is what a backend's circuit breaker is told of one
// attempt (backend/breaker.go). The attempt's verdict and the stream
// relay report through it; nothing else calls the breaker's reports.
type breakerReport uint8

const (
	reportNone      breakerReport = iota // not yet: a stream's relay reports at its end
	reportSuccess                        // the backend answered (any status but a server failure)
	reportFailure                        // a live failure: unreachable, reset, a 5xx, a broken stream
	reportAbandoned                      // tells nothing about the backend (the client left, nothing sent)
)

// to reports r to b's breaker for the attempt that TryAttempt gave t.
func (r breakerReport) to(b *backend.Backend, t backend.Ticket) {
	switch r {
	case reportSuccess:
		b.ReportSuccess(t)
	case reportFailure:
		b.ReportFailure(t)
	case reportAbandoned:
		b.ReportAbandoned(t)
	}
}

// streamReport is a stream's report at its end (the attempt left it to
// the relay: a stream's first event is no proof of a whole answer): a
// failure when the backend broke it, a success otherwise — a client that
// left mid-way or a plugin that failed says nothing against a backend
// that was sending.
func streamReport(broke bool) breakerReport {
	if broke {
		return reportFailure
	}
	return reportSuccess
}

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
// another backend may not: refused, reset, closed (a stream's included,
// before its first event), a malformed first event, or a stream's
// attempt timeout passed while the request has time left (the request's
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

// streamCall sends a stream's request and waits, within timeout
// (retries.attempt_timeout, or the request's deadline when sooner: then no
// timer is made), for its response headers and, when the backend answered
// 200, its first event (firstEvent). Until that event the client has been
// sent nothing, so a backend that fails in between — it dies after its
// headers, closes the stream empty, or stays silent — costs an attempt,
// not the client's stream.
func (ex *exchange) streamCall(b *backend.Backend, timeout time.Duration) error {
	ctx := ex.ctx
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ex.ctx, timeout, errAttemptTimeout)
		defer cancel()
	}
	err := b.DoStreamContext(ctx, ex.breq, ex.bresp)
	if err == nil && ex.bresp.StatusCode() == fasthttp.StatusOK {
		err = ex.firstEvent(ctx)
	}
	if err != nil && ex.ctx.Err() == nil && context.Cause(ctx) == errAttemptTimeout {
		return fmt.Errorf("%w: %w", errAttemptTimeout, err)
	}
	return err
}

// errEmptyStream: the backend ended its stream before any event.
var errEmptyStream = errors.New("the backend closed the stream before its first event")

// errBadFirstEvent wraps a first event that could not be framed.
var errBadFirstEvent = errors.New("the backend's first stream event could not be framed")

// firstEvent reads the 200 stream until the splitter has framed at least
// one event, left in ex.list for the relay to send first: it is relayed
// as soon as the client's response starts, so holding the response until
// it arrived costs a normal stream no time. ctx ending (the attempt
// timeout, the client leaving) closes the body stream, which ends a read
// in flight.
func (ex *exchange) firstEvent(ctx context.Context) error {
	ex.split = ex.sse
	if ex.adNDJSON {
		ex.split = ex.ndjson
	}
	ex.split.Reset()
	ex.list = ex.list[:0]
	if ex.rbuf == nil {
		// 8 KiB per open stream: events are small, the splitter carries a
		// partial event across reads, and a thousand idle streams should
		// not each hold 32 KiB.
		ex.rbuf = make([]byte, streamReadBuf)
	}
	body := ex.bresp.BodyStream()
	stop := func() bool { return true }
	if c, ok := body.(fasthttp.ReadCloserWithError); ok {
		stop = context.AfterFunc(ctx, func() { _ = c.CloseWithError(context.Cause(ctx)) })
	}
	if err := ex.readFirst(ctx, body); !stop() || err != nil {
		if err == nil {
			// ctx ended as the event came and closed the stream: the relay
			// could send no more of it. The attempt failed.
			err = fmt.Errorf("%w: %w", ctx.Err(), errEmptyStream)
		}
		ex.list = ex.list[:0]
		return err
	}
	return nil
}

// readFirst is firstEvent's read loop.
func (ex *exchange) readFirst(ctx context.Context, body io.Reader) error {
	for len(ex.list) == 0 {
		n, rerr := body.Read(ex.rbuf)
		if n > 0 {
			if err := ex.split.Feed(ex.rbuf[:n], ex.emitFn); err != nil {
				return fmt.Errorf("%w: %w", errBadFirstEvent, err)
			}
		}
		if rerr == nil {
			continue
		}
		if !errors.Is(rerr, io.EOF) {
			if cerr := ctx.Err(); cerr != nil {
				return fmt.Errorf("%w: %w", cerr, rerr)
			}
			return rerr
		}
		if err := ex.split.End(ex.emitFn); err != nil {
			return fmt.Errorf("%w: %w", errBadFirstEvent, err)
		}
		if len(ex.list) == 0 {
			return errEmptyStream
		}
	}
	return nil
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
