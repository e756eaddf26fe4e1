package server

import (
	"io"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// chat serves a chat completion. It returns true when a stream took
// ownership of ex (the relay finishes it).
func (s *Server) chat(ctx *fasthttp.RequestCtx, ex *exchange) bool {
	rt := ex.route
	ex.tver = rt.plugin.Pin()
	ex.meta = abi.AppendMeta(ex.meta[:0], "route", rt.r.Name)
	err := ex.tver.Call(s.baseCtx, abi.OpRequestDecode, pluginhost.CallInput{RequestID: ex.num, Meta: ex.meta, Payload: ctx.PostBody()}, &ex.tres)
	if err != nil {
		s.fail(ctx, ex, rt, clientInput(err))
		return false
	}
	ex.canon = append(ex.canon[:0], ex.tres.Payload...)
	if err := ex.peek(); err != nil {
		s.fail(ctx, ex, rt, err)
		return false
	}
	b, err := s.reg.Pick(ex.model)
	if err != nil {
		s.fail(ctx, ex, rt, err)
		return false
	}
	ex.backend = b
	ad := b.Adapter()
	if ad == nil { // its adapter was unloaded by a reload since Pick
		s.fail(ctx, ex, rt, apierr.New(canon.ErrOverloaded, "backend_unavailable",
			"no adapter is loaded for the backend "+b.Name))
		return false
	}
	ex.aver = ad.Pin()
	if err := ex.aver.Call(s.baseCtx, abi.OpRequestEncode, pluginhost.CallInput{RequestID: ex.num, Payload: ex.canon}, &ex.ares); err != nil {
		s.fail(ctx, ex, rt, pluginFailure(err))
		return false
	}
	ex.prepareBackendRequest()
	if err := b.Acquire(s.cfg.Timeouts.QueueWait.D()); err != nil {
		s.fail(ctx, ex, rt, apierr.Wrap(canon.ErrOverloaded, "backend_busy",
			"all backends serving "+strconv.Quote(ex.model)+" are busy, retry shortly", err))
		return false
	}
	ex.slot = true
	if !ex.stream {
		s.complete(ctx, ex)
		return false
	}
	return s.startStream(ctx, ex)
}

// peek reads the routing fields the translator's SDK repeats in the
// result meta (ABI: OpRequestDecode), so the canonical JSON is not parsed
// on the host.
func (ex *exchange) peek() error {
	model, ok := abi.MetaGet(ex.tres.Meta, "model")
	if !ok {
		return apierr.New(canon.ErrBackend, "plugin_error", "the translator did not report the request's model")
	}
	ex.model = string(model)
	v, _ := abi.MetaGet(ex.tres.Meta, "stream")
	ex.stream = string(v) == "1"
	v, _ = abi.MetaGet(ex.tres.Meta, "include_usage")
	ex.includeUsage = string(v) == "1"
	if ex.model == "" {
		return apierr.New(canon.ErrInvalidRequest, "invalid_request", "model is required")
	}
	return nil
}

func (ex *exchange) prepareBackendRequest() {
	req := ex.breq
	path := "/"
	if v, ok := abi.MetaGet(ex.ares.Meta, "path"); ok {
		path = string(v)
	}
	req.SetRequestURI(ex.backend.URL(path))
	method := "POST"
	if v, ok := abi.MetaGet(ex.ares.Meta, "method"); ok && len(v) > 0 {
		method = string(v)
	}
	req.Header.SetMethod(method)
	req.Header.SetContentType(contentType(ex.ares.Meta, "application/json"))
	req.Header.Set("X-Request-ID", ex.id)
	req.SetBody(ex.ares.Payload)
}

// complete proxies a non-streamed request.
func (s *Server) complete(ctx *fasthttp.RequestCtx, ex *exchange) {
	b := ex.backend
	err := b.Do(ex.breq, ex.bresp, s.cfg.Timeouts.Request.D())
	b.Release()
	ex.slot = false
	if err != nil {
		s.fail(ctx, ex, ex.route, backendUnreachable(b.Name, err))
		return
	}
	if code := ex.bresp.StatusCode(); code != fasthttp.StatusOK {
		s.backendError(ctx, ex, code, ex.bresp.Body())
		return
	}
	if err := ex.aver.Call(s.baseCtx, abi.OpResponseDecode, pluginhost.CallInput{RequestID: ex.num, Payload: ex.bresp.Body()}, &ex.ares); err != nil {
		s.fail(ctx, ex, ex.route, pluginFailure(err))
		return
	}
	if err := ex.tver.Call(s.baseCtx, abi.OpResponseEncode, pluginhost.CallInput{RequestID: ex.num, Meta: ex.responseMeta(), Payload: ex.ares.Payload}, &ex.tres); err != nil {
		s.fail(ctx, ex, ex.route, pluginFailure(err))
		return
	}
	ctx.SetContentType(contentType(ex.tres.Meta, "application/json"))
	ctx.SetBody(ex.tres.Payload)
}

// backendError relays a backend's error status, decoded by the adapter and
// rendered in the client's dialect.
func (s *Server) backendError(ctx *fasthttp.RequestCtx, ex *exchange, code int, body []byte) {
	ex.meta = abi.AppendMeta(ex.meta[:0], "status", strconv.Itoa(code))
	err := ex.aver.Call(s.baseCtx, abi.OpErrorDecode, pluginhost.CallInput{RequestID: ex.num, Meta: ex.meta, Payload: body}, &ex.ares)
	var ce canon.Error
	if err == nil {
		err = ce.DecodeJSON(ex.ares.Payload)
	}
	if err != nil || ce.Status < 400 {
		s.fail(ctx, ex, ex.route, apierr.New(canon.ErrBackend, "backend_error",
			"the backend "+ex.backend.Name+" answered HTTP "+strconv.Itoa(code)))
		return
	}
	if ce.Type == "" {
		ce.Type = canon.ErrBackend
	}
	e := &apierr.Error{Type: ce.Type, Status: ce.Status, Code: ce.Code, Msg: ce.Message, Param: ce.Param}
	s.fail(ctx, ex, ex.route, e)
}

// startStream sends the backend request and, once the backend has answered
// 200, hands the response to a relay; any other status is answered as an
// error now, before the client sees a stream.
func (s *Server) startStream(ctx *fasthttp.RequestCtx, ex *exchange) bool {
	b := ex.backend
	if err := b.DoStream(ex.breq, ex.bresp); err != nil {
		s.fail(ctx, ex, ex.route, backendUnreachable(b.Name, err))
		return false
	}
	if code := ex.bresp.StatusCode(); code != fasthttp.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(ex.bresp.BodyStream(), 1<<20))
		_ = ex.bresp.CloseBodyStream()
		s.backendError(ctx, ex, code, body)
		return false
	}
	ct := ex.route.r.StreamContentType
	if ct == "" {
		ct = "text/event-stream"
	}
	ctx.SetContentType(ct)
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.Response.Header.Set("X-Accel-Buffering", "no")
	ex.split = ex.sse
	if ex.aver.Manifest().Framing == "ndjson" {
		ex.split = ex.ndjson
	}
	ex.split.Reset()
	ex.responseMeta()
	s.met.streams.Add(1)
	ctx.SetBodyStreamWriter(ex.relay)
	return true
}
