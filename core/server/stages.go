package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/jsonscan"
	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/plugcall"
	"github.com/mindrouter/mindrouter/core/sched"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// stage is one step of a route's chain (chain.go) with one job. run
// returns nil to go on, errHandedOff when a stream took over the exchange,
// or the error the chain answers in the route's dialect. Each stage's time
// is recorded on the exchange's Outcome under stage() (not at all for
// outcome.NumStages).
type stage interface {
	stage() outcome.Stage
	run(ctx *fasthttp.RequestCtx, ex *exchange) error
}

// errHandedOff: the exchange now belongs to a stream relay.
var errHandedOff = errors.New("server: exchange handed off to a stream")

// buildChains assembles the stages of each plugin route's endpoint kind;
// the other routes' chains are in chain.go (buildOwnChains).
func (s *Server) buildChains() map[sdk.Endpoint][]stage {
	authn := authenticate{s.authn}
	limit := limitStage{s.limiter}
	call := attempt{s: s, max: s.cfg.Retries.MaxAttempts, timeout: s.cfg.Retries.AttemptTimeout.D()}
	return map[sdk.Endpoint][]stage{
		sdk.EndpointChat: {authn, limit, readBody{s}, precheck{s}, decode{}, access{}, budget{}, admit{s.admitter},
			call, respond{}},
		// A Responses request is a chat request whose body the Keeper
		// first completes with the stored history.
		sdk.EndpointResponses: {authn, limit, readBody{s}, keep{s.keeper}, precheck{s}, decode{}, access{}, budget{}, admit{s.admitter},
			call, respond{}},
		sdk.EndpointEmbedding: {authn, limit, readBody{s}, precheck{s}, unaryDecode{&plugcall.Embed}, access{}, budget{unary: true}, admit{s.admitter},
			call, respond{}},
		sdk.EndpointRerank: {authn, limit, readBody{s}, precheck{s}, unaryDecode{&plugcall.Rerank}, access{}, budget{unary: true}, admit{s.admitter},
			call, respond{}},
		sdk.EndpointScore: {authn, limit, readBody{s}, precheck{s}, unaryDecode{&plugcall.Rerank}, access{}, budget{unary: true}, admit{s.admitter},
			call, respond{}},
		// A one-model route (POST /api/show) reads and pre-checks its
		// body for the model field; a list route has no body to read.
		sdk.EndpointModels:   {authn, modelBody{readBody{s}}, modelBody{precheck{s}}, models{}},
		sdk.EndpointTokenize: {authn, limit, readBody{s}, precheck{s}, tokenize{s}},
	}
}

// authenticate checks the key from the headers, before any body is read.
type authenticate struct{ authn auth.Authenticator }

func (authenticate) stage() outcome.Stage { return outcome.StageAuth }

func (a authenticate) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	return authenticateScope(ctx, ex, a.authn, auth.ScopeInference)
}

func (a authenticate) expect(s *Server, ctx *fasthttp.RequestCtx, rt *route) int {
	return expectKey(s.baseCtx, ctx, rt, a.authn, auth.ScopeInference)
}

// authenticateScope checks the key and that it holds scope (0: any key).
func authenticateScope(ctx *fasthttp.RequestCtx, ex *exchange, authn auth.Authenticator, scope auth.Scope) error {
	key, err := keyFromRequest(&ctx.Request, &ex.route.places)
	if err != nil {
		return err
	}
	p, err := authn.Authenticate(ex.ctx, key)
	if err != nil {
		ctx.SetConnectionClose() // its body is not read
		return authFailure(err)
	}
	if !p.Has(scope) {
		ctx.SetConnectionClose()
		return apierr.New(canon.ErrPermission, "insufficient_scope", "this API key may not call the model APIs")
	}
	ex.principal = p
	ex.out.KeyID, ex.out.User, ex.out.Group = p.KeyID, p.User, p.Group
	ex.noteKey(key) // recheck.go: a stream checks it again
	return nil
}

// authFailure is a failed key check as the client sees it: 401 for a
// missing or bad key (never saying which check failed), 503 when the key
// could not be checked (the store unreachable and the key not cached).
func authFailure(err error) error {
	switch {
	case errors.Is(err, auth.ErrNoKey):
		return apierr.Wrap(canon.ErrAuthentication, "invalid_api_key", "missing API key: send Authorization: Bearer mr2_... or X-API-Key", err)
	case errors.Is(err, auth.ErrBadKey):
		return apierr.Wrap(canon.ErrAuthentication, "invalid_api_key", "invalid API key", err)
	case errors.Is(err, context.Canceled):
		return errClientGone(err)
	}
	e := apierr.Wrap(canon.ErrOverloaded, "authentication_unavailable", "the gateway cannot check API keys right now, retry shortly", err)
	e.RetryAfter = 1
	return e
}

var errAmbiguousKey = apierr.New(canon.ErrInvalidRequest, "ambiguous_credentials",
	"the request carries more than one API key header; send exactly one")

// keyFromHeaders returns the one key the request carries. Two
// Authorization headers, two X-API-Key headers, or both with different
// values are refused: a proxy and a client disagreeing about who calls is
// not resolved by picking one.
func keyFromHeaders(h *fasthttp.RequestHeader) ([]byte, error) {
	var authz, xkey []byte
	nAuthz, nKey := 0, 0
	for k, v := range h.All() {
		switch {
		case len(k) == 13 && bytes.EqualFold(k, []byte("Authorization")):
			authz = v
			nAuthz++
		case len(k) == 9 && bytes.EqualFold(k, []byte("X-API-Key")):
			xkey = v
			nKey++
		}
	}
	if nAuthz > 1 || nKey > 1 {
		return nil, errAmbiguousKey
	}
	if nAuthz == 1 && nKey == 1 {
		a := auth.KeyFromHeaders(authz, nil)
		if !bytes.Equal(a, bytes.TrimSpace(xkey)) {
			return nil, errAmbiguousKey
		}
	}
	return auth.KeyFromHeaders(authz, xkey), nil
}

// readBody reads the body of an authenticated request, bounded by
// limits.max_body_bytes, timeouts.body_read, and the bytes all requests
// together may hold (limits.max_buffered_body_bytes).
type readBody struct{ s *Server }

func (readBody) stage() outcome.Stage { return outcome.StageRead }

func (r readBody) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	return readCapped{r.s, r.s.cfg.Limits.MaxBodyBytes}.run(ctx, ex)
}

func (r readBody) expect(s *Server, ctx *fasthttp.RequestCtx, rt *route) int {
	return readCapped{r.s, r.s.cfg.Limits.MaxBodyBytes}.expect(s, ctx, rt)
}

// readCapped is readBody under a route's own cap (limits.admin.max_body_bytes
// on the admin API). A body of known length reserves its length of
// limits.max_buffered_body_bytes before a byte is read; a chunked body
// reserves its bytes as they arrive (chunkedBody), so a client that
// announces chunks and sends nothing holds nothing of the budget.
type readCapped struct {
	s   *Server
	max int
}

func (readCapped) stage() outcome.Stage { return outcome.StageRead }

func (r readCapped) expect(_ *Server, ctx *fasthttp.RequestCtx, _ *route) int {
	if ctx.Request.Header.ContentLength() > r.max {
		return fasthttp.StatusRequestEntityTooLarge
	}
	return fasthttp.StatusContinue
}

func (r readCapped) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	s, max := r.s, r.max
	cl := ctx.Request.Header.ContentLength()
	if cl > max {
		ctx.SetConnectionClose()
		return tooLarge(max)
	}
	src := ctx.RequestBodyStream()
	if cl >= 0 {
		if !s.holdBody(int64(cl)) {
			ctx.SetConnectionClose()
			return errGatewayBusy()
		}
		ex.bodyHeld = int64(cl)
	} else if src != nil {
		src = &chunkedBody{r: src, s: s, ex: ex}
	}
	body, err := readLimited(src, ex.body[:0], max, cl)
	ex.body = body
	if err != nil {
		ctx.SetConnectionClose()
		switch {
		case errors.Is(err, errTooLarge):
			return tooLarge(max)
		case errors.Is(err, errBufferFull):
			return errGatewayBusy()
		case isTimeout(err):
			return apierr.Wrap(canon.ErrInvalidRequest, "request_timeout", "the request body did not arrive in time", err).WithStatus(fasthttp.StatusRequestTimeout)
		}
		return apierr.Wrap(canon.ErrInvalidRequest, "bad_request", "the request body could not be read", err)
	}
	ex.out.BytesIn = int64(len(body))
	return nil
}

var errTooLarge = errors.New("body over the limit")

func tooLarge(max int) error {
	return apierr.New(canon.ErrRequestTooLarge, "request_too_large",
		"request body is larger than the limit of "+itoa(int64(max))+" bytes")
}

// readLimited appends r to dst, failing once it would exceed max bytes.
func readLimited(r io.Reader, dst []byte, max, sizeHint int) ([]byte, error) {
	if r == nil {
		return dst, nil
	}
	if sizeHint > 0 && cap(dst) < sizeHint {
		dst = make([]byte, 0, sizeHint)
	}
	for {
		if len(dst) == cap(dst) {
			n := 2*cap(dst) + 4096
			if n > max+1 {
				n = max + 1
			}
			if n <= len(dst) {
				return dst, errTooLarge
			}
			dst = append(dst[:cap(dst)], make([]byte, n-cap(dst))...)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > max {
			return dst, errTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// precheck validates the JSON body natively, within nesting and size
// limits, before a plugin spends memory on it, and reads the route's
// routing fields: a model name must be a short string without control
// characters (it is echoed in errors and logs, and routed on). It runs for
// routes that declare routing fields (sdk.Route.Routing), which says their
// body is a JSON object; a route without them gets its raw body, bounded
// only by limits.max_body_bytes.
type precheck struct{ s *Server }

func (precheck) stage() outcome.Stage { return outcome.StageCheck }

// emptyObject stands in for the absent body of a route whose routing
// fields are all outside it.
var emptyObject = []byte("{}")

// maxModelName bounds a model name.
const maxModelName = 256

func (p precheck) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	if ex.route.r.Routing == nil {
		return nil
	}
	lim := jsonscan.Limits{MaxDepth: p.s.cfg.Limits.MaxJSONDepth, MaxValues: p.s.cfg.Limits.MaxJSONValues}
	body, placed := ex.body, ex.route.places.model.from != 0
	if placed && len(body) == 0 {
		body = emptyObject // a GET of a route whose model is in its path
	}
	if err := jsonscan.Scan(body, ex.route.spec, lim, &ex.scan); err != nil {
		var je *jsonscan.Error
		if errors.As(err, &je) && je.Kind == jsonscan.ErrTooMany {
			return apierr.Wrap(canon.ErrRequestTooLarge, "request_too_large", je.Error(), err)
		}
		return apierr.Wrap(canon.ErrInvalidRequest, "invalid_json", err.Error(), err)
	}
	if placed {
		return ex.placedModel(ctx)
	}
	if ex.route.spec == nil {
		return nil
	}
	v, ok := ex.scan.Get(fieldModel)
	if !ok || v.Kind != jsonscan.String {
		return nil // the translator says what is wrong, in its words
	}
	if err := checkModel(ex, v); err != nil {
		return err
	}
	ex.routeFields()
	return nil
}

// checkModel refuses a model name that is too long or carries control
// characters; the unescaped name is left in ex.buf.
var (
	errModelTooLong = apierr.New(canon.ErrInvalidRequest, "invalid_model", "model: longer than 256 bytes")
	errModelControl = apierr.New(canon.ErrInvalidRequest, "invalid_model", "model: must not contain control characters")
)

func checkModel(ex *exchange, v jsonscan.Value) error {
	if v.End-v.Start > 6*maxModelName+2 { // every byte \u-escaped, plus quotes
		return errModelTooLong
	}
	name, err := jsonscan.AppendString(ex.buf[:0], ex.body, v)
	ex.buf = name
	if err != nil || jsonscan.HasControl(name) {
		return errModelControl
	}
	if len(name) > maxModelName {
		return errModelTooLong
	}
	return nil
}

// routeFields takes the routing fields from the native scan (the model
// name is in ex.buf). When every one is well-formed the request is
// "routed": its decode may be left to a fused call (decode). Otherwise
// the translator decodes first and reports what is wrong in its words.
func (ex *exchange) routeFields() {
	if len(ex.buf) == 0 {
		return
	}
	r := &ex.req
	stream := ex.route.r.Routing.StreamByDflt
	if v, ok := ex.scan.Get(fieldStream); ok && v.Kind != jsonscan.Null {
		b, ok := v.Bool()
		if !ok {
			return
		}
		stream = b
	}
	usage := false
	if v, ok := ex.scan.Get(fieldIncludeUsage); ok && v.Kind != jsonscan.Null {
		b, ok := v.Bool()
		if !ok {
			return
		}
		usage = b
	}
	choices := 1
	if v, ok := ex.scan.Get(fieldChoices); ok && v.Kind != jsonscan.Null {
		n, ok := v.Int(ex.body)
		if !ok || n < 1 || n > 1<<16 {
			return // the translator says what is wrong
		}
		choices = int(n)
	}
	if v, ok := ex.scan.Get(fieldPrompts); ok && v.Kind == jsonscan.Array {
		choices *= max(arrayLen(ex.body, v), 1) // each prompt gets its choices
	}
	maxTok := 0
	for i := fieldMaxTokens; i < ex.route.spec.Len(); i++ {
		if v, ok := ex.scan.Get(i); ok && v.Kind != jsonscan.Null {
			n, ok := v.Int(ex.body)
			if !ok || n < 1 || n > 1<<31-1 {
				return
			}
			maxTok = int(n)
			break
		}
	}
	r.Model, r.Stream, r.IncludeUsage, r.MaxTokens, r.Choices = string(ex.buf), stream, usage, maxTok, choices
	ex.routed = true
	ex.out.Model, ex.out.Stream = r.Model, r.Stream
}

// decode pins the translator and runs its request decode: client body →
// canonical request (ex.canon) and its routing fields (ex.req). After it
// the canonical request is valid, with one exception, the fused fast
// path: a request the native scan routed (ex.routed) whose translator's
// module holds adapters too (ex.fusable: a bundle) stays in its client
// form, because when the chosen backend's adapter is in that module the
// fused op decodes and encodes it in one call (fusedTranslation). What
// needs the canonical request of such a request — a failed admission, a
// count near the context window, an adapter in another module — gets it
// from ex.canonical(), which decodes once.
type decode struct{}

func (decode) stage() outcome.Stage { return outcome.StageDecode }

func (decode) run(_ *fasthttp.RequestCtx, ex *exchange) error {
	if err := ex.pinTranslator(); err != nil {
		return err
	}
	if ex.routed && ex.fusable {
		return nil // deferred to the attempt's translation
	}
	return ex.decodeRequest()
}

// pinTranslator pins the route's plugin version for the whole request and
// finds its translator component.
func (ex *exchange) pinTranslator() error {
	if ex.tver != nil {
		return nil
	}
	ex.tver = ex.route.plugin.Pin()
	if ex.tver == nil {
		return pluginFailure(errPluginGone)
	}
	m := ex.tver.Manifest()
	idx, _, ok := m.PartNamed(ex.route.part)
	if !ok { // a reload replaced the module since the route index was built
		return pluginFailure(errPluginGone)
	}
	ex.calls.T, ex.fusable = idx, m.Kind == sdk.KindBundle
	return nil
}

// decodeRequest runs the translator's request_decode (decode,
// canonical).
func (ex *exchange) decodeRequest() error {
	if err := ex.calls.DecodeRequest(ex.ctx, ex.tver, ex.body, &ex.req); err != nil {
		return clientInput(err)
	}
	ex.decoded = true
	ex.canon = append(ex.canon[:0], ex.req.Canonical...)
	ex.out.Model, ex.out.Stream = logredact.Truncate(ex.req.Model, maxModelName), ex.req.Stream
	if ex.req.Model == "" {
		return apierr.New(canon.ErrInvalidRequest, "invalid_request", "model is required")
	}
	if len(ex.req.Model) > maxModelName || hasControl(ex.req.Model) {
		return apierr.New(canon.ErrInvalidRequest, "invalid_model", "model: must be at most 256 bytes without control characters")
	}
	return nil
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// budget reserves a budgeted user's tokens for the request (limits.go).
type budget struct{ unary bool }

func (budget) stage() outcome.Stage { return outcome.StageLimit }

func (b budget) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	return ex.reserveTokens(ctx, b.unary)
}

// admit asks the scheduler for a backend slot; the wait ends when the
// client goes away (ex.ctx).
type admit struct{ a sched.Admitter }

func (admit) stage() outcome.Stage { return outcome.StageAdmit }

func (a admit) run(_ *fasthttp.RequestCtx, ex *exchange) error {
	r := &ex.sreq
	r.Model, r.User, r.Group, r.Weight = ex.req.Model, ex.principal.User, ex.principal.Group, ex.principal.Weight
	r.Needs = ex.needs()
	// The fair scheduler's cost of the request (its share of a user's
	// turn): a quarter of the body's bytes plus the output cap, not a
	// tokenizer's count, which would cost milliseconds per request to
	// weigh users against each other; the context check counts tokens
	// only near a model's window (context.go).
	r.EstTokens = len(ex.body)/4 + ex.req.MaxTokens*max(ex.req.Choices, 1)
	ex.watch.start() // a client that leaves while queued frees its place
	ex.decDone = false
	l, err := a.a.Admit(ex.ctx, r)
	if err != nil {
		if ex.ctx.Err() == nil {
			// The client's own mistakes come first, also for a request
			// whose decode was deferred: a bad request for an unknown
			// model is a 400.
			if derr := ex.canonical(); derr != nil {
				return derr
			}
		}
		return err
	}
	ex.lease, ex.backend = l, l.Backend()
	ex.out.Backend = ex.backend.Name
	ex.noteStarted()
	return nil
}

// needs is what the request needs from its model: by the route's kind,
// and from the markers the pre-check's scan found in the body (on the
// decoded path too: the scan saw the same body the translator decodes;
// a Responses body with its stored history spliced in). An embeddings
// request does not set Embed: Ollama embeds with any model, not only
// those whose /api/show lists "embedding" (its embed handler asks for no
// capability), so a chat model's missing "embedding" is not a "cannot".
func (ex *exchange) needs() sched.Needs {
	var n sched.Needs
	if ex.route.kind == sdk.EndpointChat || ex.route.kind == sdk.EndpointResponses {
		n.Generate = true
	}
	if ex.route.spec != nil {
		m, marks := ex.scan.Marks, &ex.route.marks
		n.Vision, n.Tools, n.Structured = m&marks.vision != 0, m&marks.tools != 0, m&marks.structured != 0
	}
	return n
}

// modelBody runs a body stage only for a one-model route.
type modelBody struct{ s stage }

func (m modelBody) stage() outcome.Stage { return m.s.stage() }

func (m modelBody) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	if !ex.route.oneModel() {
		return nil
	}
	return m.s.run(ctx, ex)
}

func (m modelBody) expect(s *Server, ctx *fasthttp.RequestCtx, rt *route) int {
	if e, ok := m.s.(expecter); ok && rt != nil && rt.oneModel() {
		return e.expect(s, ctx, rt)
	}
	return fasthttp.StatusContinue
}
