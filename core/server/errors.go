package server

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

const opModelsEncode = abi.OpModelsEncode

// fail answers err in the route's dialect. When the translator itself
// cannot render the error, it falls back to OpenAI's error shape.
func (s *Server) fail(ctx *fasthttp.RequestCtx, ex *exchange, rt route, err error) {
	e := apierr.Public(err)
	ex.status, ex.errMsg = e.Status, e.Error()
	ce := e.Canon(ex.id)
	if e.Status >= 500 {
		// Server-side failures name the request so support can find its log.
		ce.Message += " (request " + ex.id + ")"
	}
	ex.buf = ce.AppendJSON(ex.buf[:0])
	if rt.plugin != nil {
		ex.meta = abi.AppendMeta(ex.meta[:0], "route", rt.r.Name)
		if perr := rt.plugin.Call(s.baseCtx, abi.OpErrorEncode, pluginhost.CallInput{RequestID: ex.num, Meta: ex.meta, Payload: ex.buf}, &ex.tres); perr == nil {
			status := e.Status
			if v, ok := abi.MetaGet(ex.tres.Meta, "status"); ok {
				if n, err := strconv.Atoi(string(v)); err == nil && n >= 400 && n < 600 {
					status = n
				}
			}
			ctx.SetStatusCode(status)
			ctx.SetContentType(contentType(ex.tres.Meta, "application/json"))
			ctx.SetBody(ex.tres.Payload)
			return
		}
	}
	ctx.SetStatusCode(e.Status)
	ctx.SetContentType("application/json")
	ctx.SetBody(nativeError(ex.buf[:0], &ce))
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
	w.Str(string(e.Type))
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

func contentType(meta []byte, def string) string {
	if v, ok := abi.MetaGet(meta, "content-type"); ok && len(v) > 0 {
		return string(v)
	}
	return def
}

// clientInput turns a translator's request-decode failure into what the
// client sees: its own bad input is a 400 with the plugin's message; any
// other plugin failure is a 502.
func clientInput(err error) error {
	var se *pluginhost.StatusError
	if errors.As(err, &se) && se.Status == abi.StatusBadInput {
		return apierr.Wrap(canon.ErrInvalidRequest, "invalid_request", se.Msg, err)
	}
	return pluginFailure(err)
}

// pluginFailure is a 502 naming the failure class, never the plugin's
// internals.
func pluginFailure(err error) error {
	var se *pluginhost.StatusError
	switch {
	case errors.As(err, &se) && se.Status == abi.StatusBadInput:
		return apierr.Wrap(canon.ErrBackend, "bad_backend_response", "the backend sent a response the gateway could not translate: "+se.Msg, err)
	case errors.Is(err, pluginhost.ErrPoolTimeout):
		return apierr.Wrap(canon.ErrOverloaded, "plugin_busy", "the gateway is overloaded, retry shortly", err)
	}
	return apierr.Wrap(canon.ErrBackend, "plugin_error", "a gateway plugin failed while handling this request", err)
}

// backendUnreachable classifies a transport error talking to a backend.
func backendUnreachable(name string, err error) error {
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) {
		return apierr.Wrap(canon.ErrTimeout, "backend_timeout", "the backend "+name+" did not answer in time", err)
	}
	return apierr.Wrap(canon.ErrBackend, "backend_unreachable", "the backend "+name+" could not be reached", err)
}

// finish writes the access log line and returns ex to the pool.
func (s *Server) finish(ctx *fasthttp.RequestCtx, ex *exchange) {
	if ctx != nil && ex.status == 200 {
		ex.status = ctx.Response.StatusCode()
	}
	s.logRequest(ex)
	ex.release()
}

func (s *Server) logRequest(ex *exchange) {
	dur := time.Since(ex.start)
	s.met.observe(ex.route.r.Name, ex.status, dur)
	lvl := slog.LevelInfo
	if ex.status >= 500 {
		lvl = slog.LevelWarn
	}
	if !s.log.Enabled(context.Background(), lvl) {
		return
	}
	backendName := ""
	if ex.backend != nil {
		backendName = ex.backend.Name
	}
	s.log.LogAttrs(context.Background(), lvl, "request",
		slog.String("req_id", ex.id),
		slog.String("route", ex.route.r.Name),
		slog.String("model", ex.model),
		slog.String("backend", backendName),
		slog.Int("status", ex.status),
		slog.Bool("stream", ex.stream),
		slog.Int("chunks", ex.chunks),
		slog.Duration("dur", dur),
		slog.String("error", ex.errMsg))
}
