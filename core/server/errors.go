package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/plugcall"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// maxClientMessage bounds an error message sent to a client; messages
// may quote client input (a model name) or a backend's words.
const maxClientMessage = 1024

// fail answers err in the route's dialect (status overrides the error's
// own when not 0). When the translator cannot render the error, the
// answer falls back to OpenAI's error shape.
func (s *Server) fail(ctx *fasthttp.RequestCtx, ex *exchange, err error, status int) {
	e := apierr.Public(err)
	if status == 0 {
		status = e.Status
	}
	ex.out.Status, ex.out.ErrorCode = status, e.Code
	if ex.out.Error == "" {
		ex.out.Error = logredact.Truncate(e.Error(), 2048)
	}
	if status == statusClientClosed {
		ex.out.ClientGone = true
		noAnswer(ctx)
		return
	}
	challenge(ctx, status)
	ce := e.Canon(ex.id)
	ce.Status = status
	ce.Message = logredact.Truncate(ce.Message, maxClientMessage)
	if status >= 500 {
		// Server-side failures name the request so support can find its log.
		ce.Message += " (request " + ex.id + ")"
	}
	if status == fasthttp.StatusServiceUnavailable || status == fasthttp.StatusTooManyRequests {
		ra := e.RetryAfterSeconds()
		if ra == 0 {
			ra = apierr.DefaultRetryAfter
		}
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(ra))
	}
	if ex.route.plugin != nil && ex.pinTranslator() == nil {
		var out plugcall.EncodedError
		// The base context: an error is rendered even when the request's
		// own context ended (a deadline).
		if ex.calls.EncodeError(s.baseCtx, ex.tver, &ce, false, ex.buf, &out) == nil {
			if out.Status != 0 {
				status = out.Status
			}
			ctx.SetStatusCode(status)
			ctx.SetContentType(orDefault(out.ContentType, "application/json"))
			ctx.SetBody(out.Body)
			return
		}
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(nativeError(ex.buf[:0], &ce))
}

// noAnswer closes the connection without a response, for a client that
// went away (499, recorded, never sent). A handler that returns without
// a status gets fasthttp's default 200 with an empty body, which a client
// that only half-closed its side still reads as a successful, empty
// answer; a closed connection is what it must see instead.
func noAnswer(ctx *fasthttp.RequestCtx) {
	ctx.SetConnectionClose()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(net.Conn) {}) // fasthttp closes the connection after it
}

// nativeError writes OpenAI's error shape without a plugin.
func nativeError(dst []byte, e *canon.Error) []byte {
	var w jsonw.W
	w.B = dst
	w.Obj()
	w.Key("error")
	w.Obj()
	w.Key("message")
	w.Str(e.Message)
	w.Key("type")
	w.Str(apierr.OpenAIType(e.Type, e.Status)) // OpenAI's name, not the canonical one
	w.Key("param")
	if e.Param == "" {
		w.Null()
	} else {
		w.Str(e.Param)
	}
	w.Key("code")
	if e.Code == "" {
		w.Null()
	} else {
		w.Str(e.Code)
	}
	w.EndObj()
	w.EndObj()
	return w.B
}

// nativeStreamError frames the native error for an open stream of the
// route's framing (when the translator cannot).
func nativeStreamError(dst []byte, e *canon.Error, ndjson bool) []byte {
	if ndjson {
		var w jsonw.W
		w.B = dst
		w.Obj()
		w.Key("error")
		w.Str(e.Message)
		w.EndObj()
		return append(w.B, '\n')
	}
	dst = append(dst, "data: "...)
	return append(nativeError(dst, e), '\n', '\n')
}

// clientInput turns a translator's request-decode failure into what the
// client sees: its own bad input is a 400 with the plugin's message
// (bounded); any other plugin failure is a 502.
func clientInput(err error) error {
	var se *pluginhost.StatusError
	if errors.As(err, &se) && se.Status == abi.StatusBadInput {
		return apierr.Wrap(canon.ErrInvalidRequest, "invalid_request", logredact.Truncate(se.Msg, maxClientMessage), err)
	}
	return pluginFailure(err)
}

// pluginFailure is a 502 naming the failure class, never the plugin's
// internals or the backend's raw words.
// codeStateTooLarge is plugins/responses.CodeStateTooLarge (core does not
// import plugins).
const codeStateTooLarge = "stream_state_too_large"

func pluginFailure(err error) error {
	var se *pluginhost.StatusError
	switch {
	case errors.As(err, &se) && se.Status == abi.StatusBadInput:
		return apierr.Wrap(canon.ErrBackend, "bad_backend_response", "the backend sent a response the gateway could not translate", err)
	case errors.Is(err, context.Canceled): // before ErrPoolTimeout: a wait the client abandoned
		return errClientGone(err)
	case errors.Is(err, context.DeadlineExceeded):
		return apierr.Wrap(canon.ErrTimeout, "request_timeout", "the request did not complete within the gateway's request timeout", err)
	case errors.Is(err, pluginhost.ErrPoolTimeout):
		e := apierr.Wrap(canon.ErrOverloaded, "plugin_busy", "the gateway is overloaded, retry shortly", err)
		e.RetryAfter = 1
		return e
	case errors.Is(err, pluginhost.ErrTooLarge):
		return apierr.Wrap(canon.ErrRequestTooLarge, "request_too_large", "the request is larger than the gateway's plugins accept", err)
	case errors.As(err, &se) && se.Status == abi.StatusStateTooLarge:
		// A stream's answer outgrew the state its translator keeps
		// (limits.state_max_kb): the Responses translator ends it
		// incomplete on this code, with the output so far.
		return apierr.Wrap(canon.ErrBackend, codeStateTooLarge, "the answer outgrew the stream state the gateway keeps for it", err)
	}
	return apierr.Wrap(canon.ErrBackend, "plugin_error", "a gateway plugin failed while handling this request", err)
}

// backendUnreachable classifies a transport error talking to a backend.
func backendUnreachable(name string, err error) error {
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) || isTimeout(err) {
		return apierr.Wrap(canon.ErrTimeout, "backend_timeout", "the backend "+name+" did not answer in time", err)
	}
	return apierr.Wrap(canon.ErrBackend, "backend_unreachable", "the backend "+name+" could not be reached", err)
}

// finish records the outcome, tells the observers, writes the access log
// line and returns ex to the pool.
func (s *Server) finish(ctx *fasthttp.RequestCtx, ex *exchange) {
	o := &ex.out
	if ctx != nil && o.Status == 200 {
		o.Status = ctx.Response.StatusCode()
	}
	o.Duration = time.Since(ex.start)
	if ex.turn != nil {
		ex.turn.End(o.Status)
		ex.turn = nil
	}
	ex.observeBackend()
	ex.estimateUsage() // before the quota (releaseHeld) and the observers read it
	ex.releaseHeld()
	if ctx != nil && ex.watch.stole {
		ctx.SetConnectionClose()
	}
	if len(s.observers) > 0 {
		ex.fillAudit(ctx)
		for _, obs := range s.observers {
			obs.Observe(o)
		}
	}
	s.logRequest(ex)
	ex.release()
}

func (s *Server) logRequest(ex *exchange) {
	o := &ex.out
	s.met.observeOutcome(o, s.reg)
	lvl := slog.LevelInfo
	if o.Status >= 500 {
		lvl = slog.LevelWarn
	}
	if !s.log.Enabled(context.Background(), lvl) {
		return
	}
	s.log.LogAttrs(context.Background(), lvl, "request",
		slog.String("req_id", o.RequestID),
		slog.String("route", o.Route),
		slog.String("model", o.Model),
		slog.String("key", o.KeyID),
		slog.String("backend", o.Backend),
		slog.Int("status", o.Status),
		slog.Bool("stream", o.Stream),
		slog.Int("chunks", o.Chunks),
		slog.Int("prompt_tokens", o.Usage.Prompt),
		slog.Int("completion_tokens", o.Usage.Completion),
		slog.Float64("dur_ms", float64(o.Duration.Microseconds())/1000),
		slog.String("error", o.Error))
}

// logTrunc bounds client-controlled bytes echoed in a message.
func logTrunc(b []byte) string { return logredact.Truncate(string(b), logredact.MaxEcho) }
