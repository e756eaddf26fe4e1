package backend

// Cancelling a backend call with a context.
//
// fasthttp's HostClient knows no context.Context. DoContext and
// DoStreamContext hand theirs, in a ctxCall, to the HostClient's Transport
// (ctxTransport) as a Request user value. For such a request the transport
// performs the round trip itself, as fasthttp's DefaultTransport does but
// on a connection it takes from the HostClient's pool and gives back to it
// (AcquireConn, ReleaseConn, CloseConn: fasthttp's exported transport API),
// so it knows exactly which connection the request is using. While an
// attempt holds a connection, a callback registered on the context
// (context.AfterFunc, or OnEnd for an EndNotifier: the gateway's request
// context, which saves AfterFunc's allocations) may close that
// connection, which aborts the blocked write or read at once and makes the
// backend (vLLM, Ollama) stop generating. The attempt detaches the
// connection from the call, under the call's mutex, before the connection
// can go back to the pool: a cancellation that arrives later finds nothing
// to close, and can never close a connection that another request has
// taken from the pool since.
//
// Requests without a cancellable context (Do, DoStream, discovery probes)
// take fasthttp's DefaultTransport, unchanged.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// DoContext is Do bounded also by ctx: cancelling ctx aborts the call and
// closes its connection; the error then wraps ctx.Err() (context.Canceled
// or context.DeadlineExceeded). timeout still ends the call with
// fasthttp.ErrTimeout, and a stale pooled connection is retried as by Do.
// Only a connection still being dialled is not interrupted: the dial is
// bounded by timeouts.connect, and the call returns after it.
func (b *Backend) DoContext(ctx context.Context, req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) error {
	return doContext(ctx, b.client, req, resp, timeout, true)
}

// DoStreamContext is DoStream whose wait for the response headers is
// cancelled by ctx, as DoContext's call is. Once it has returned the
// response, ctx no longer concerns the call: the caller reads
// resp.BodyStream() and closes it with resp.CloseBodyStream, also when ctx
// ends meanwhile. A timeout set with req.SetTimeout is not applied (the
// stream client's idle timeout is).
func (b *Backend) DoStreamContext(ctx context.Context, req *fasthttp.Request, resp *fasthttp.Response) error {
	return doContext(ctx, b.stream, req, resp, 0, false)
}

// EndNotifier is a context that runs a callback when it ends without
// context.AfterFunc's allocations (the gateway's request context): OnEnd
// registers f, ok false (f not registered) when the context has ended
// already; Unhook(id) unregisters it, reporting whether f had not run.
// f runs in the goroutine that ends the context and must be quick.
type EndNotifier interface {
	OnEnd(f func()) (id uint64, ok bool)
	Unhook(id uint64) bool
}

func doContext(ctx context.Context, hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response,
	timeout time.Duration, timed bool,
) error {
	en, notifies := ctx.(EndNotifier)
	if !notifies && ctx.Done() == nil && timed { // never cancelled: the plain call
		return hc.DoTimeout(req, resp, timeout)
	}
	// A stream always takes ctxTransport's round trip: its body's reads
	// are bounded one by one by the idle timeout (streamBody).
	if ctx.Err() != nil {
		return ctxErr(ctx)
	}
	c := callPool.Get().(*ctxCall) //nolint:forcetypeassert
	c.ctx, c.fired, c.deadline = ctx, false, time.Time{}
	if timed && timeout > 0 {
		c.deadline = time.Now().Add(timeout)
	}
	var stop func() bool
	var hook uint64
	if notifies {
		var ok bool
		if hook, ok = en.OnEnd(c.cancelFunc); !ok {
			c.ctx = nil
			callPool.Put(c)
			return ctxErr(ctx)
		}
	} else {
		stop = context.AfterFunc(ctx, c.cancelFunc)
	}
	req.SetUserValue(callKey{}, c)
	var err error
	if timed {
		err = hc.DoTimeout(req, resp, timeout)
	} else {
		err = hc.Do(req, resp)
	}
	req.RemoveUserValue(callKey{})
	var stopped bool
	if notifies {
		stopped = en.Unhook(hook)
	} else {
		stopped = stop()
	}
	if stopped {
		c.ctx = nil
		callPool.Put(c)
	}
	// Otherwise the callback has run or is running and may still touch c:
	// it is left to the garbage collector.
	return err
}

// ctxErr is the error of a call that ctx ended: ctx.Err(), with the cause
// when one was given.
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}

// callKey is the Request user-value key of a ctxCall.
type callKey struct{}

// ctxCall is one DoContext or DoStreamContext call in flight.
type ctxCall struct {
	ctx        context.Context
	deadline   time.Time // of the whole call; zero for none
	cancelFunc func()    // c.cancel, bound once per pooled ctxCall

	mu    sync.Mutex
	conn  net.Conn // the connection of the attempt in progress, nil between attempts
	fired bool     // ctx ended while the call was in progress
}

var callPool = sync.Pool{New: func() any {
	c := &ctxCall{}
	c.cancelFunc = c.cancel
	return c
}}

// cancel is the context.AfterFunc callback: it closes the connection of
// the attempt in progress, and makes any later attempt give up.
func (c *ctxCall) cancel() {
	c.mu.Lock()
	c.fired = true
	if c.conn != nil {
		closeNetConn(c.conn)
	}
	c.mu.Unlock()
}

// closeNetConn closes conn, for a TLS connection the socket under it (a
// TLS close would first try to send close_notify, which a blocked write
// can hold up).
func closeNetConn(conn net.Conn) {
	if tc, ok := conn.(interface{ NetConn() net.Conn }); ok {
		conn = tc.NetConn()
	}
	_ = conn.Close()
}

// attach makes conn the connection a cancellation closes; false (conn not
// attached) when ctx has already ended.
func (c *ctxCall) attach(conn net.Conn) bool {
	c.mu.Lock()
	ok := !c.fired
	if ok {
		c.conn = conn
	}
	c.mu.Unlock()
	return ok
}

// detach ends what attach began: from its return on, no cancellation
// touches the connection, which may go back to the pool. It reports
// whether ctx ended meanwhile, when the connection may have been closed.
func (c *ctxCall) detach() (fired bool) {
	c.mu.Lock()
	fired = c.fired
	c.conn = nil
	c.mu.Unlock()
	return fired
}

// failed is an attempt's result after its connection was closed.
func (c *ctxCall) failed(retry bool, err error, fired bool) (bool, error) {
	if fired {
		return false, ctxErr(c.ctx)
	}
	return retry, err
}

// ctxTransport is every backend HostClient's Transport.
type ctxTransport struct{}

func (ctxTransport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	if c, _ := req.UserValue(callKey{}).(*ctxCall); c != nil {
		return c.roundTrip(hc, req, resp)
	}
	return fasthttp.DefaultTransport.RoundTrip(hc, req, resp)
}

// roundTrip is one attempt, fasthttp's DefaultTransport.RoundTrip with the
// connection attached to c from its acquisition until the response head
// (streamed) or the whole response has been read. Its retry result feeds
// HostClient.Do's retry loop (and so retryStale) as DefaultTransport's does.
func (c *ctxCall) roundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	skipBody := resp.SkipBody
	stream := resp.StreamBody // HostClient.Do has folded StreamResponseBody in

	var reqTimeout time.Duration
	if !c.deadline.IsZero() {
		if reqTimeout = time.Until(c.deadline); reqTimeout <= 0 {
			return false, fasthttp.ErrTimeout
		}
	}
	cc, err := hc.AcquireConn(reqTimeout, req.ConnectionClose())
	if err != nil {
		return false, err
	}
	conn := cc.Conn()
	if !c.attach(conn) {
		hc.CloseConn(cc)
		return false, ctxErr(c.ctx)
	}
	resp.ParseNetConn(conn)

	// A pooled connection may carry another request's deadlines: always set.
	if err = conn.SetWriteDeadline(earliest(c.deadline, hc.WriteTimeout)); err != nil {
		fired := c.detach()
		hc.CloseConn(cc)
		return c.failed(true, err, fired)
	}
	resetConnection := false
	if hc.MaxConnDuration > 0 && time.Since(cc.CreatedTime()) > hc.MaxConnDuration && !req.ConnectionClose() {
		req.SetConnectionClose()
		resetConnection = true
	}
	bw := hc.AcquireWriter(conn)
	err = req.Write(bw)
	if resetConnection {
		req.Header.ResetConnectionClose()
	}
	if err == nil {
		err = bw.Flush()
	}
	hc.ReleaseWriter(bw)
	if err != nil {
		if x, ok := err.(interface{ Timeout() bool }); ok && x.Timeout() {
			err = fasthttp.ErrTimeout
		}
		fired := c.detach()
		hc.CloseConn(cc)
		return c.failed(true, err, fired)
	}

	if err = conn.SetReadDeadline(earliest(c.deadline, hc.ReadTimeout)); err != nil {
		fired := c.detach()
		hc.CloseConn(cc)
		return c.failed(true, err, fired)
	}
	if skipBody || req.Header.IsHead() {
		resp.SkipBody = true
	}
	if hc.DisableHeaderNamesNormalizing {
		resp.Header.DisableNormalizing()
	}
	br := hc.AcquireReader(conn)

	if !stream {
		err = resp.ReadLimitBody(br, hc.MaxResponseBodySize)
		hc.ReleaseReader(br)
		fired := c.detach()
		if err != nil || fired {
			hc.CloseConn(cc)
			// ErrBodyTooLarge would only come back.
			return c.failed(err != fasthttp.ErrBodyTooLarge, err, fired)
		}
		if resetConnection || req.ConnectionClose() || resp.ConnectionClose() {
			hc.CloseConn(cc)
		} else {
			hc.ReleaseConn(cc)
			if testHookReleased != nil {
				testHookReleased(c.ctx)
			}
		}
		return false, nil
	}

	// A streamed body. fasthttp's network-backed body stream can only be
	// had from Response.ReadLimitBody, and resp cannot take a wrapper of
	// it without releasing it; so the response is read into inner, whose
	// headers resp copies and whose body stream resp's wraps.
	inner := fasthttp.AcquireResponse()
	inner.StreamBody = true
	inner.SkipBody = resp.SkipBody
	if hc.DisableHeaderNamesNormalizing {
		inner.Header.DisableNormalizing()
	}
	err = inner.ReadLimitBody(br, hc.MaxResponseBodySize)
	fired := c.detach()
	if err != nil || fired {
		fasthttp.ReleaseResponse(inner) // releases its body stream, if any
		hc.ReleaseReader(br)
		hc.CloseConn(cc)
		return c.failed(err != fasthttp.ErrBodyTooLarge, err, fired)
	}
	closeConn := resetConnection || req.ConnectionClose() || inner.ConnectionClose()
	body := inner.BodyStream()
	if body == nil { // no body: HEAD, 204, 304
		inner.Header.CopyTo(&resp.Header)
		fasthttp.ReleaseResponse(inner)
		hc.ReleaseReader(br)
		if closeConn {
			hc.CloseConn(cc)
		} else {
			hc.ReleaseConn(cc)
		}
		return false, nil
	}
	var reader io.Reader = body
	if inner.Header.ContentLength() == -1 {
		// chunked: one Read takes every event already buffered (chunked.go)
		reader = &chunkedBody{br: br}
	}
	sb := &streamBody{
		reader:    reader,
		conn:      conn,
		idle:      hc.ReadTimeout,
		fullyRead: inner.Header.ContentLength() == 0,
	}
	sb.release = func(discard bool) {
		fasthttp.ReleaseResponse(inner)
		hc.ReleaseReader(br)
		// The caller may decide that the connection is unusable while
		// reading the body (resp.SetConnectionClose), as with fasthttp's.
		if closeConn || discard || resp.ConnectionClose() {
			hc.CloseConn(cc)
		} else {
			hc.ReleaseConn(cc)
		}
	}
	resp.SetBodyStream(sb, -1)
	inner.Header.CopyTo(&resp.Header) // after SetBodyStream, which sets Content-Length
	return false, nil
}

// testHookReleased, when set (by tests only), runs after an attempt has
// given its connection back to the pool, before the call returns.
var testHookReleased func(ctx context.Context)

// earliest is the earlier of deadline (zero: none) and now+timeout
// (timeout <= 0: none); zero when neither.
func earliest(deadline time.Time, timeout time.Duration) time.Time {
	if timeout > 0 {
		if t := time.Now().Add(timeout); deadline.IsZero() || t.Before(deadline) {
			return t
		}
	}
	return deadline
}

// streamBody is a streamed response body read from a connection of the
// pool, fasthttp's own client stream body over inner's: reads are
// serialised, each bounded by the idle timeout, and closing it interrupts a read in flight (by closing the
// connection), waits for that read to return, then releases the buffers
// and gives the connection back to the pool, or closes it when the body
// was not read to its end.
type streamBody struct {
	reader    io.Reader
	conn      net.Conn
	idle      time.Duration // the stream client's ReadTimeout (timeouts.stream_idle): per read
	deadline  time.Time     // the read deadline last set
	release   func(discard bool)
	closed    atomic.Bool
	fullyRead bool
	readLock  sync.Mutex
	closeOnce sync.Once
}

var _ fasthttp.ReadCloserWithError = (*streamBody)(nil)

func (s *streamBody) Read(p []byte) (int, error) {
	if s.closed.Load() {
		return 0, io.ErrClosedPipe
	}
	s.readLock.Lock()
	defer s.readLock.Unlock()
	if s.closed.Load() {
		return 0, io.ErrClosedPipe
	}
	if s.idle > 0 {
		// The deadline set before the response head was read is for one
		// read, not the whole stream: each read gets the idle timeout
		// afresh (fasthttp's own stream keeps that first deadline, which
		// cut every stream at stream_idle after it began). It is moved
		// only once the last one set has aged by idleSlack (a deadline
		// change is a runtime timer change, which every event paid for):
		// a silent backend is cut between stream_idle − slack and
		// stream_idle after its last bytes.
		if now := time.Now(); s.deadline.Sub(now) < s.idle-idleSlack(s.idle) {
			s.deadline = now.Add(s.idle)
			_ = s.conn.SetReadDeadline(s.deadline)
		}
	}
	n, err := s.reader.Read(p)
	if errors.Is(err, io.EOF) {
		s.fullyRead = true
	}
	return n, err
}

// idleSlack is how much a moved read deadline may age before it is
// moved again: a sixteenth of the idle timeout, at most a second.
func idleSlack(d time.Duration) time.Duration { return min(d/16, time.Second) }

// CloseWithError closes the stream; err (the reason the reader stopped
// early) discards the connection even when the body was read in full.
func (s *streamBody) CloseWithError(err error) error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		locked := s.readLock.TryLock()
		discard := err != nil || !locked || !s.fullyRead
		if discard {
			_ = s.conn.Close() // unblocks a Read in flight
		}
		if !locked {
			s.readLock.Lock()
		}
		defer s.readLock.Unlock()
		s.release(discard)
	})
	return nil
}
