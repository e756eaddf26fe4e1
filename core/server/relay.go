package server

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/plugcall"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// streamReadBuf is the size of one read from a backend stream.
const streamReadBuf = 8 << 10

// relayBody is a stream's response body. fasthttp writes it by calling
// WriteTo on the connection's own goroutine, after the response headers
// (fasthttp.BodyWriterTo), where each Write is one HTTP chunk, flushed. So
// a stream costs no goroutine and no pipe of its own, and each event batch
// one write syscall and no goroutine hand-off (SetBodyStreamWriter runs the
// writer on a goroutine of its own behind a pipe: two wake-ups and a copy
// per chunk, and a goroutine stack per open stream).
//
// It is allocated per stream, not kept in the pooled exchange: fasthttp
// calls Close after WriteTo, when the relay has already given the
// exchange back.
type relayBody struct {
	ex *exchange // nil once the relay or Close has finished it
}

// errRelayRead: the relay body is written with WriteTo only.
var errRelayRead = errors.New("server: a stream relay body is written with WriteTo, not read")

func (b *relayBody) Read([]byte) (int, error)  { return 0, errRelayRead }
func (b *relayBody) SupportsBodyWriteTo() bool { return true }

func (b *relayBody) WriteTo(w io.Writer) (int64, error) {
	ex := b.ex
	if ex == nil {
		return 0, errRelayRead
	}
	b.ex = nil
	return ex.relay(w)
}

// Close finishes the exchange when fasthttp never wrote the body (the
// client left before the response could be sent).
func (b *relayBody) Close() error {
	if ex := b.ex; ex != nil {
		b.ex = nil
		_ = ex.bresp.CloseBodyStream()
		ex.clientGone = true
		ex.s.met.streams.Add(-1)
		ex.s.met.disconnects.Add(1)
		if ex.backend != nil {
			reportAbandoned.to(ex.backend, ex.brk) // its first event came; the client left before seeing it
		}
		ex.out.ClientGone, ex.out.Status = true, statusClientClosed
		ex.s.finish(nil, ex)
	}
	return nil
}

// relay copies a backend stream to the client: frame natively, decode each
// read's events with the adapter in one call, encode the resulting chunks
// with the translator in one call, write (one flushed chunk). It runs on
// the client connection's goroutine (relayBody.WriteTo) and owns ex until
// it returns; the error is the client write's that ended it, if any.
//
// A failed write means the client went away: the relay stops, and closing
// the backend body stream drops the backend connection, which cancels the
// generation there and frees the slot.
func (ex *exchange) relay(w io.Writer) (n int64, werr error) {
	s := ex.s
	t0 := time.Now()
	ex.werr = nil
	// broke: the backend broke the stream after it started (its connection
	// lost, the stream idle timeout, a stream that cannot be framed, an end
	// without the end marker).
	broke := false
	defer func() {
		if r := recover(); r != nil {
			// A bug must cost this stream, not the process.
			s.log.LogAttrs(s.baseCtx, slog.LevelError, "panic relaying stream", slog.String("req_id", ex.id),
				slog.Any("panic", r), slog.String("stack", string(debug.Stack())))
			ex.clientGone, ex.out.Status = true, 500
			reportAbandoned.to(ex.backend, ex.brk)
		} else {
			streamReport(broke).to(ex.backend, ex.brk) // retry.go
		}
		if ex.backendDone && !ex.clientGone {
			// The backend said it is done, but its connection is reusable only
			// once the body is read to the end (the chunked terminator). Drain
			// it off the client's path, bounded, on a response of its own.
			go drain(ex.bresp)
			ex.bresp = new(fasthttp.Response)
		} else {
			_ = ex.bresp.CloseBodyStream()
		}
		s.met.streams.Add(-1)
		s.met.chunks.Add(uint64(ex.out.Chunks))
		s.met.shaped.Add(uint64(ex.shaped))
		n, werr = ex.out.BytesOut, ex.werr
		ex.out.Stages[outcome.StageRespond] += time.Since(t0)
		if ex.clientGone {
			s.met.disconnects.Add(1)
			ex.out.ClientGone = true
			if ex.out.Status == 200 {
				ex.out.Status = statusClientClosed
			}
		}
		s.finish(nil, ex)
	}()
	body := ex.bresp.BodyStream()
	// firstEvent framed the first event(s) before the client's response
	// began: they go out first.
	if len(ex.list) > 0 && !ex.step(w, false) {
		return
	}
	for !ex.backendDone {
		nr, rerr := body.Read(ex.rbuf)
		if nr > 0 && ex.keyRefused(time.Now()) { // recheck.go
			ex.streamFail(w, errKeyRefused())
			return
		}
		if nr > 0 {
			ex.list = ex.list[:0]
			if err := ex.split.Feed(ex.rbuf[:nr], ex.emitFn); err != nil {
				ex.streamFail(w, apierr.Wrap(canon.ErrBackend, "bad_backend_stream", "the backend stream could not be framed", err))
				broke = true
				return
			}
			if len(ex.list) > 0 && !ex.step(w, false) {
				return
			}
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				ex.streamFail(w, ex.truncated(rerr))
				broke = true
				return
			}
			break
		}
	}
	if !ex.backendDone {
		// An unterminated last event still counts; it may be the end marker.
		ex.list = ex.list[:0]
		_ = ex.split.End(ex.emitFn)
		if len(ex.list) > 0 && !ex.step(w, false) {
			return
		}
	}
	if !ex.backendDone {
		// The connection ended without the protocol's end marker ([DONE],
		// done:true): the answer is truncated and the client must know.
		ex.streamFail(w, ex.truncated(nil))
		broke = true
		return
	}
	ex.list = ex.list[:0]
	ex.step(w, true)
	return
}

// step runs one batch of framed events (ex.list) through the attempt's
// translation and writes the result. It returns false when the stream
// must stop. The plugin calls' time is summed into StreamPlugin (a part
// of the respond stage): two clock reads per batch, none per event.
func (ex *exchange) step(w io.Writer, end bool) bool {
	t0 := time.Now()
	out, send, err := ex.tr.streamBatch(ex, end)
	ex.out.StreamPlugin += time.Since(t0)
	if err != nil {
		if send && !ex.send(w, out) {
			return false
		}
		ex.streamFail(w, pluginFailure(err))
		return false
	}
	return !send || ex.send(w, out)
}

// send writes one batch's client bytes and counts them.
func (ex *exchange) send(w io.Writer, out []byte) bool {
	ex.out.Chunks++
	ex.out.BytesOut += int64(len(out))
	return ex.write(w, out)
}

// noteDecoded records what a stream batch told about usage and the end.
func (ex *exchange) noteDecoded() {
	if ex.dec.Usage.Reported {
		ex.out.Usage = ex.dec.Usage
	}
	if ex.dec.FinishReason != "" {
		ex.out.FinishReason = ex.dec.FinishReason
	}
	ex.outEst += int64(ex.dec.OutputTokens)
	if ex.dec.Done {
		ex.backendDone = true
	}
}

// write sends p as one chunk (flushed by fasthttp's chunk writer); a
// failed write means the client went away.
func (ex *exchange) write(w io.Writer, p []byte) bool {
	if len(p) == 0 {
		return true // an empty chunk would end the HTTP body
	}
	if ex.out.TTFT == 0 {
		ex.out.TTFT = time.Since(ex.start)
	}
	if ex.s.keep > 0 {
		ex.keepResponse(p)
	}
	if ex.turn != nil {
		ex.turn.Write(p) // before the client has it: a chained request finds it stored
	}
	ex.extendWrite() // timeouts.client_write (clientwrite.go)
	if _, err := w.Write(p); err != nil {
		ex.clientGone, ex.werr = true, err
		return false
	}
	return true
}

// streamFail ends a stream that broke after the client got its 200: the
// translator writes the error as the dialect ends a stream (an OpenAI
// error data event, an Anthropic error event, an Ollama error line), with
// no trailer after it, so the client can tell the stream is incomplete.
// When the translator cannot, a native error framed for the route's
// stream is sent.
func (ex *exchange) streamFail(w io.Writer, err error) {
	s := ex.s
	e := apierr.Public(err)
	ex.out.Status, ex.out.ErrorCode = e.Status, e.Code
	ex.out.Error = logredact.Truncate(e.Error(), 2048)
	s.log.LogAttrs(s.baseCtx, slog.LevelWarn, "stream failed", slog.String("req_id", ex.id), slog.String("error", ex.out.Error))
	ce := e.Canon(ex.id)
	if e.Status >= 500 {
		ce.Message += " (request " + ex.id + ")"
	}
	var out plugcall.EncodedError
	// The translator's stream state lets it end the stream in step with
	// it (Responses: the next sequence number, the output so far).
	t0 := time.Now()
	perr := ex.calls.EncodeStreamError(s.streamCtx, ex.tver, &ce, true, ex.tr.streamState(ex), ex.buf, &out)
	ex.out.StreamPlugin += time.Since(t0)
	if perr == nil && len(out.Body) > 0 {
		ex.write(w, out.Body)
		return
	}
	ex.list = nativeStreamError(ex.list[:0], &ce, ex.route.ndjson)
	ex.write(w, ex.list)
}

// truncated is the error for a backend stream that ended before its end
// marker, cleanly (cause nil) or through a read error or idle timeout.
func (ex *exchange) truncated(cause error) error {
	if errors.Is(cause, fasthttp.ErrTimeout) || errors.Is(cause, os.ErrDeadlineExceeded) {
		return apierr.Wrap(canon.ErrTimeout, "backend_stream_timeout",
			"the backend "+ex.backend.Name+" stopped sending for longer than the stream idle timeout", cause)
	}
	return apierr.Wrap(canon.ErrBackend, "backend_stream_truncated",
		"the backend "+ex.backend.Name+" closed the stream before it was complete", cause)
}

// drain reads what is left of a finished backend stream (at most 64 KiB:
// normally just the chunked terminator) so its connection returns to the
// pool instead of being closed.
func drain(resp *fasthttp.Response) {
	if body := resp.BodyStream(); body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	}
	_ = resp.CloseBodyStream()
	fasthttp.ReleaseResponse(resp)
}
