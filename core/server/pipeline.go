package server

import (
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

var errPluginGone = errors.New("plugin was unloaded")

// selfTimed is the stage() of a stage that records its own sub-stages.
const selfTimed = outcome.NumStages

// attempt sends the request to the admitted backend through its adapter:
// encode, then call, until the response headers and first event (a
// stream) or the whole response. The loop only makes attempts; whether a
// failed one is made again, on another backend, and what the backend's
// circuit breaker is told, is the retry decision's (tried.verdict,
// retry.go): up to retries.max_attempts attempts in all (default 3), when
// no response byte reached the client and the attempt failed in a way
// another backend may not — unreachable, its connection dead, a stream
// that ends or breaks before its first event or sends none within
// retries.attempt_timeout, or a 500/502/503/504 answer — and the
// scheduler has a backend this request has not tried. Chat, completions,
// embeddings, rerank and score are safe to re-send: the client got
// nothing from the failed attempt. A 4xx is never retried. A stream's
// breaker report waits for its end (relay.go), so that one broken after
// it started counts against the backend.
type attempt struct {
	s       *Server
	max     int           // retries.max_attempts
	timeout time.Duration // retries.attempt_timeout: a stream's wait for its first event
}

func (attempt) stage() outcome.Stage { return selfTimed }

func (a attempt) run(_ *fasthttp.RequestCtx, ex *exchange) error {
	for {
		b := ex.backend
		tk, ok := b.TryAttempt()
		if !ok {
			// Its breaker opened, or its one half-open probe went to
			// another request, since this one was admitted.
			if !a.another(ex) {
				return errNoBackendLeft(b.Name)
			}
			continue
		}
		ex.brk = tk
		ex.out.Attempts++
		t := a.try(ex, b)
		v := t.verdict()
		v.report.to(b, tk)
		if !v.again {
			return v.err
		}
		ex.discardResponse()
		if !a.another(ex) {
			return v.err
		}
		a.logRetry(ex, b.Name, &t)
	}
}

// try makes one attempt on b: encode, then call. Its stage times go to
// the Outcome.
func (a attempt) try(ex *exchange, b *backend.Backend) tried {
	t := tried{backend: b.Name, attempts: ex.out.Attempts, max: a.max, sent: ex.out.BytesOut > 0}
	t0 := time.Now()
	if err := ex.encode(b); err != nil {
		t.encodeErr = err
		return t
	}
	t1 := time.Now()
	ex.out.Stages[outcome.StageEncode] += t1.Sub(t0)
	t.stream = ex.req.Stream // after encode: a fused request's is the module's reading
	ex.prepareBackendRequest()
	var err error
	if t.stream {
		err = ex.streamCall(b, a.timeout)
	} else {
		err = b.DoContext(ex.ctx, ex.breq, ex.bresp, a.s.cfg.Timeouts.Request.D())
	}
	ex.out.Stages[outcome.StageBackend] += time.Since(t1)
	if err != nil {
		t.err, t.reqErr = err, ex.ctx.Err()
		return t
	}
	t.status = ex.bresp.StatusCode()
	if retryableStatus(t.status) {
		t.alternative = a.hasAlternative(ex)
	}
	return t
}

// logRetry notes a failed attempt that is made again on another backend.
func (a attempt) logRetry(ex *exchange, backend string, t *tried) {
	if t.err == nil {
		a.s.log.LogAttrs(ex.ctx, slog.LevelWarn, "backend answered a server error; retrying on another backend",
			slog.String("req_id", ex.id), slog.String("backend", backend), slog.Int("status", t.status))
		return
	}
	a.s.log.LogAttrs(ex.ctx, slog.LevelWarn, "backend attempt failed; retrying on another backend",
		slog.String("req_id", ex.id), slog.String("backend", backend), slog.String("error", t.err.Error()))
}

// encode pins b's adapter, chooses the attempt's translation
// (translationFor: fused, canonical or unary) and writes the backend
// request through it.
func (ex *exchange) encode(b *backend.Backend) error {
	if err := ex.pinAdapter(b); err != nil {
		return err
	}
	tr, err := ex.translationFor(b)
	if err != nil {
		return err
	}
	ex.tr = tr
	return tr.request(ex)
}

// pinAdapter pins b's adapter for this attempt (the translator's own pin
// when both are in one module) and finds its component.
func (ex *exchange) pinAdapter(b *backend.Backend) error {
	ad := b.Adapter()
	if ad == nil { // its adapter was unloaded by a reload since admission
		return noAdapter(b)
	}
	if ex.aver != nil && ex.aver != ex.tver {
		ex.aver.Release()
	}
	ex.aver = nil
	if ad == ex.route.plugin {
		ex.aver = ex.tver // one module: one pinned version serves both
	} else {
		ex.aver = ad.Pin()
	}
	if ex.aver == nil {
		return noAdapter(b)
	}
	idx, am, ok := ex.aver.Manifest().AdapterFor(b.Engine)
	if !ok {
		return noAdapter(b)
	}
	ex.calls.A, ex.adNDJSON = idx, am.Framing == sdk.FramingNDJSON
	return nil
}

func noAdapter(b *backend.Backend) error {
	return apierr.New(canon.ErrOverloaded, "backend_unavailable", "no adapter is loaded for the backend "+b.Name)
}

// withImages runs a request call; when the adapter needs images the
// client gave by URL (abi.StatusNeedImages), it fetches them through the
// SSRF guard once per request and runs the call again with them. A
// plugin's bad_input is the client's error.
func (ex *exchange) withImages(call func() error) error {
	err := call()
	if urls, ok := needImages(err); ok && len(ex.calls.Images) == 0 {
		if ex.imgHeld != nil { // a fetch that failed before
			ex.imgHeld.Release()
		}
		ex.imgHeld = ex.imageBudget() // given back by releaseHeld
		if ex.calls.Images, err = ex.s.fetchImages(ex.ctx, urls, ex.calls.Images[:0], ex.imgHeld); err != nil {
			return err
		}
		err = call()
	}
	if err == nil {
		return nil
	}
	if _, again := needImages(err); again { // it had them: a plugin bug
		return pluginFailure(err)
	}
	return clientInput(err)
}

// another moves ex to a lease on a backend this request has not tried.
func (a attempt) another(ex *exchange) bool {
	tried := ex.backend
	ex.lease.Release()
	ex.lease = nil
	ex.sreq.Exclude = append(ex.sreq.Exclude, tried)
	ex.bresp.Reset()
	ex.decDone = false // the decision is the new admission's
	l, err := a.s.admitter.Admit(ex.ctx, &ex.sreq)
	if err != nil {
		return false
	}
	ex.lease, ex.backend = l, l.Backend()
	for _, b := range ex.sreq.Exclude {
		if b == ex.backend {
			return false // nowhere else to go; the lease is released at finish
		}
	}
	ex.out.Backend = ex.backend.Name
	return true
}

// hasAlternative reports whether a routable backend this request has not
// tried serves its model: a backend's 5xx answer is kept for the client
// when there is none, rather than dropped for an admission that would
// come back to the same backend.
func (a attempt) hasAlternative(ex *exchange) bool {
	for _, b := range a.s.reg.Backends() {
		if b == ex.backend || !b.Routable() || !b.Status().Serves(ex.sreq.Model) {
			continue
		}
		tried := false
		for _, x := range ex.sreq.Exclude {
			tried = tried || x == b
		}
		if !tried {
			return true
		}
	}
	return false
}

func errClientGone(err error) error {
	return apierr.Wrap(canon.ErrInvalidRequest, "client_closed_request", "the client closed the connection", err).WithStatus(statusClientClosed)
}

// statusClientClosed is nginx's 499: recorded, never sent.
const statusClientClosed = 499

func (ex *exchange) prepareBackendRequest() {
	req, r := ex.breq, &ex.breqOut
	req.Reset()
	ex.uri = ex.backend.AppendURL(ex.uri[:0], r.Path)
	req.SetRequestURIBytes(ex.uri)
	req.Header.SetMethod(r.Method)
	req.Header.SetContentType(r.ContentType)
	req.Header.Set("X-Request-ID", ex.id)
	req.SetBody(r.Body)
}

// respond answers from the backend's response: translated whole by the
// attempt's translation, or handed to a stream relay.
type respond struct{}

func (respond) stage() outcome.Stage { return outcome.StageRespond }

func (respond) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	ex.watch.stop()
	if ex.req.Stream {
		return ex.startStream(ctx)
	}
	// The backend answered: its slot is free for the next request now,
	// before the translation.
	ex.lease.Release()
	if code := ex.bresp.StatusCode(); code != fasthttp.StatusOK {
		return ex.backendError(code, ex.bresp.Body())
	}
	if err := ex.tr.response(ex, ex.bresp.Body()); err != nil {
		return pluginFailure(err)
	}
	if ex.calls.Shaped {
		ex.s.met.answered.Add(1)
	}
	ex.out.Usage, ex.out.FinishReason, ex.outEst = ex.dec.Usage, ex.dec.FinishReason, int64(ex.dec.OutputTokens)
	ctx.SetContentType(orDefault(ex.enc.ContentType, "application/json"))
	ex.noteDropped(ctx)
	ex.out.BytesOut = int64(len(ex.enc.Body))
	if ex.turn != nil {
		ex.turn.Write(ex.enc.Body)
	}
	return ex.setAnswer(ctx, ex.enc.Body) // clientwrite.go
}

// DroppedToolsHeader names, on an answer, the client's tools the
// translator did not offer the model (hosted tools no backend runs:
// OpenAI Responses' web_search, file_search, ...).
const DroppedToolsHeader = "X-MindRouter-Dropped-Tools"

// noteDropped sets DroppedToolsHeader when the request's decode dropped
// tools.
func (ex *exchange) noteDropped(ctx *fasthttp.RequestCtx) {
	if d := ex.calls.DroppedTools(); len(d) > 0 {
		ctx.Response.Header.SetBytesV(DroppedToolsHeader, d)
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// maxBackendMessage bounds a backend's error message passed to a client.
const maxBackendMessage = 512

// backendError relays a backend's error status, decoded by the adapter and
// rendered in the client's dialect. Only the adapter's structured message
// reaches the client (bounded, or replaced by a generic one when
// errors.backend_messages is generic); the raw body goes to the log.
func (ex *exchange) backendError(code int, body []byte) error {
	ex.out.Error = "backend " + ex.backend.Name + " answered HTTP " + strconv.Itoa(code) + ": " +
		logredact.Truncate(string(body), 1024)
	var ce canon.Error
	err := ex.calls.DecodeError(ex.ctx, ex.aver, code, body, &ce)
	if err != nil || ce.Status < 400 {
		return apierr.New(canon.ErrBackend, "backend_error", "the backend "+ex.backend.Name+" answered HTTP "+strconv.Itoa(code))
	}
	if ce.Type == "" {
		ce.Type = canon.ErrBackend
	}
	msg := logredact.Truncate(ce.Message, maxBackendMessage)
	if ex.s.cfg.Errors.BackendMessages == "generic" {
		msg = genericMessage(ce.Status)
	}
	e := &apierr.Error{Type: ce.Type, Status: ce.Status, Code: ce.Code, Msg: msg, Param: logredact.Truncate(ce.Param, 128)}
	if ce.Status == fasthttp.StatusServiceUnavailable || ce.Status == fasthttp.StatusTooManyRequests {
		e.RetryAfter = 2
	}
	return e
}

func genericMessage(status int) string {
	switch {
	case status == 404:
		return "the model or resource was not found on the backend"
	case status == 429:
		return "the backend is rate limiting, retry shortly"
	case status < 500:
		return "the backend rejected the request"
	}
	return "the backend failed to process the request"
}

// startStream, with the backend's response headers and first event in
// (streamCall), hands a 200 to a relay; any other status is answered as an
// error now, before the client sees a stream.
func (ex *exchange) startStream(ctx *fasthttp.RequestCtx) error {
	if code := ex.bresp.StatusCode(); code != fasthttp.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(ex.bresp.BodyStream(), 1<<20))
		_ = ex.bresp.CloseBodyStream()
		return ex.backendError(code, body)
	}
	ct := ex.route.r.StreamContentType
	if ct == "" {
		ct = "text/event-stream"
	}
	ctx.SetContentType(ct)
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.Response.Header.Set("X-Accel-Buffering", "no")
	ex.noteDropped(ctx)
	ex.meta = ex.calls.StreamMeta(ex.header(), ex.meta)
	ex.s.met.streams.Add(1)
	if ex.watch.stole {
		// The watcher consumed a byte of a pipelined request: this
		// connection cannot serve another one.
		ctx.SetConnectionClose()
	}
	ctx.SetBodyStream(&relayBody{ex: ex}, -1)
	return errHandedOff
}

// models answers the model list through the translator.
type models struct{}

func (models) stage() outcome.Stage { return outcome.StageRespond }

func (models) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	list := ex.s.reg.Models()
	ex.visibleModels(&list) // access.go
	one := ""
	if ex.route.oneModel() {
		m, err := pickModel(ex, &list)
		if err != nil {
			return err
		}
		one = m
	}
	ex.buf = list.AppendJSON(ex.buf[:0])
	if err := ex.pinTranslator(); err != nil {
		return err
	}
	if err := ex.calls.EncodeModels(ex.ctx, ex.tver, one, ex.buf, &ex.enc); err != nil {
		return pluginFailure(err)
	}
	ctx.SetContentType(orDefault(ex.enc.ContentType, "application/json"))
	ctx.SetBody(ex.enc.Body)
	return nil
}

// oneModel reports whether a models route is about one model (Ollama's
// POST /api/show): it declares a routing model field (ABI 2.2).
func (rt *route) oneModel() bool {
	return rt.r.Routing != nil && rt.r.Routing.Model != ""
}

// pickModel narrows list to the model the request body names (read and
// pre-checked by the stages before: a one-model route's only routing field
// is the model, so a string model is always in ex.req), answering 400
// without one and 404 for one no backend serves.
func pickModel(ex *exchange, list *canon.ModelList) (string, error) {
	name := ex.req.Model
	if name == "" {
		return "", apierr.New(canon.ErrInvalidRequest, "invalid_request", "model is required (a string)")
	}
	ex.out.Model = name
	i := modelIndex(list, name)
	if i < 0 {
		return "", errUnknownModel(name)
	}
	list.Models = list.Models[i : i+1]
	return name, nil
}

// modelIndex finds name in list, -1 when absent: "name" and
// "name:latest" are the same model, as everywhere else.
func modelIndex(list *canon.ModelList, name string) int {
	short := strings.TrimSuffix(name, ":latest")
	for i := range list.Models {
		if id := list.Models[i].ID; id == name || id == short || strings.TrimSuffix(id, ":latest") == short {
			return i
		}
	}
	return -1
}

// findModel returns the entry of name in list.
func findModel(list *canon.ModelList, name string) (*canon.Model, bool) {
	if i := modelIndex(list, name); i >= 0 {
		return &list.Models[i], true
	}
	return nil, false
}

func errUnknownModel(name string) error {
	return apierr.New(canon.ErrNotFound, "model_not_found", "model "+strconv.Quote(logredact.Truncate(name, maxModelName))+" not found")
}
