package admin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/audit"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/quota"
	"github.com/mindrouter/mindrouter/core/store"
)

// Invalidator drops cached credentials on every replica after a change.
type Invalidator interface {
	Invalidate(ctx context.Context, keyHashes ...[]byte)
	InvalidateUser(ctx context.Context, userID int64)
	InvalidateAll(ctx context.Context)
}

// Quotas reports and resets a user's quota counters.
type Quotas interface {
	Usage(ctx context.Context, userID int64, l auth.Limits) (quota.Report, error)
	Reset(ctx context.Context, userID int64, l auth.Limits) error
}

// Backends applies backend changes to the live registry of this gateway.
type Backends interface {
	Apply(ctx context.Context, b store.Backend) error
	Remove(ctx context.Context, name string) error
	Refresh(ctx context.Context, name string) error
}

// Options configure a Handler. Store is required; the rest may be nil:
// without Keys nothing is invalidated (right for a lone CLI without Redis,
// whose peers re-read keys within their cache bound), without Quotas usage
// is read from and reset in the store's usage row, without Backends only
// the store changes (and responses say nothing else).
type Options struct {
	Store    store.Store
	Keys     Invalidator
	Quotas   Quotas
	Backends Backends
	// Audit reads the request audit (ClickHouse or the embedded sink);
	// nil answers /api/admin/audit/search and /{request_id} with 503.
	Audit audit.Searcher
	// Queue is the fair scheduler (queue.go); nil answers GET
	// /api/admin/queue with no waiters (the least_loaded policy).
	Queue Queue
	// Telemetry reads the GPU and backend history (core/telemetry); nil
	// answers /api/admin/telemetry/… with 503.
	Telemetry Telemetry
	// Cluster is the live view of backends and nodes; nil answers GET
	// /api/admin/cluster with empty lists.
	Cluster Cluster
	Log     *slog.Logger
	Now     func() time.Time
}

// requestTimeout bounds one request's store and Redis calls.
const requestTimeout = 30 * time.Second

// Handler serves the admin and self-service APIs. Safe for concurrent use.
type Handler struct {
	st          store.Store
	keys        Invalidator
	quotas      Quotas
	backends    Backends
	audit       audit.Searcher
	queueView   Queue
	telemetry   Telemetry
	clusterView Cluster
	log         *slog.Logger
	now         func() time.Time
}

// New returns a Handler.
func New(o Options) *Handler {
	h := &Handler{st: o.Store, keys: o.Keys, quotas: o.Quotas, backends: o.Backends, audit: o.Audit, queueView: o.Queue,
		telemetry: o.Telemetry, clusterView: o.Cluster, log: o.Log, now: o.Now}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.log = h.log.With("component", "admin")
	if h.now == nil {
		h.now = time.Now
	}
	if h.keys == nil {
		h.keys = noInvalidator{}
	}
	return h
}

type noInvalidator struct{}

func (noInvalidator) Invalidate(context.Context, ...[]byte) {}
func (noInvalidator) InvalidateUser(context.Context, int64) {}
func (noInvalidator) InvalidateAll(context.Context)         {}

// Handles reports whether path belongs to this handler: /api/admin/… and
// /api/me, /api/me/….
func Handles(path []byte) bool {
	return bytes.HasPrefix(path, []byte("/api/admin/")) || bytes.Equal(path, []byte("/api/admin")) ||
		bytes.Equal(path, []byte("/api/me")) || bytes.HasPrefix(path, []byte("/api/me/"))
}

// Request is one call of the API, as Do takes it.
type Request struct {
	Method     string
	Path       string // e.g. "/api/admin/users/7"
	Query      url.Values
	Body       []byte
	RemoteAddr string // recorded in the admin audit log
}

// Serve answers one request of an authenticated caller. body has been read
// and size-bounded by the server.
func (h *Handler) Serve(ctx *fasthttp.RequestCtx, p *auth.Principal, body []byte) {
	q := url.Values{}
	for k, v := range ctx.QueryArgs().All() {
		q.Add(string(k), string(v))
	}
	r := Request{Method: string(ctx.Method()), Path: string(ctx.Path()), Query: q, Body: body, RemoteAddr: ctx.RemoteIP().String()}
	// fasthttp's context ends only at shutdown, and it must not be a
	// parent: context's watcher goroutine reads it (Value, for the cause)
	// after the handler returned and fasthttp reset it for the next
	// request, a data race. The store calls get their own bound.
	cctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	status, out, hdr := h.do(cctx, p, r)
	if hdr.allow != "" {
		ctx.Response.Header.Set("Allow", hdr.allow)
	}
	if hdr.retryAfter > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(hdr.retryAfter))
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(out)
}

// Do answers one request in-process (the CLI's path): the JSON body and its
// status, exactly as Serve would send them.
func (h *Handler) Do(ctx context.Context, p *auth.Principal, r Request) (status int, body []byte) {
	status, body, _ = h.do(ctx, p, r)
	return status, body
}

// answerHeaders are the headers an answer needs beyond its body.
type answerHeaders struct {
	allow      string // a 405's Allow
	retryAfter int    // seconds; set on every 429 and 503
}

func (h *Handler) do(ctx context.Context, p *auth.Principal, r Request) (int, []byte, answerHeaders) {
	c := &call{ctx: ctx, p: p, req: r}
	v, err, allow := h.route(c)
	hdr := answerHeaders{allow: allow}
	status := fasthttp.StatusOK
	if err != nil {
		status, v, hdr.retryAfter = h.failure(c, err)
	}
	out, merr := json.Marshal(v)
	if merr != nil {
		h.log.Error("encode response", "path", r.Path, "err", merr)
		return fasthttp.StatusInternalServerError, []byte(`{"detail":"internal error"}`), answerHeaders{}
	}
	return status, out, hdr
}

// call is one request in flight.
type call struct {
	ctx context.Context
	p   *auth.Principal
	req Request
	ids []int64 // the path's numeric ids, in order
}

func (c *call) id() int64 { return c.ids[0] }

// apiError is an answer other than 200; Detail is shown to the client.
type apiError struct {
	Status int
	Detail string
	// RetryAfter is the Retry-After of a 429 or 503, in seconds (0: the
	// default, defaultRetryAfter).
	RetryAfter int
}

// defaultRetryAfter is the Retry-After of a 429 or 503 that names none;
// storeRetryAfter that of an answer the store's outage made: long enough
// for a connection pool to find a restarted or failed-over database.
const (
	defaultRetryAfter = 1
	storeRetryAfter   = 2
)

func (e *apiError) Error() string { return e.Detail }

func errorf(status int, detail string) error { return &apiError{Status: status, Detail: detail} }

func badRequest(detail string) error { return errorf(fasthttp.StatusBadRequest, detail) }
func notFound(detail string) error   { return errorf(fasthttp.StatusNotFound, detail) }
func conflict(detail string) error   { return errorf(fasthttp.StatusConflict, detail) }

type detail struct {
	Detail string `json:"detail"`
}

// failure turns err into a status, body and Retry-After (seconds, 0 for
// none). A store that cannot be reached is a 503 with Retry-After: the
// client should retry, not report a bug. Anything else not an apiError is
// a server fault: logged with its text, answered without it.
func (h *Handler) failure(c *call, err error) (int, any, int) {
	var ae *apiError
	if errors.As(err, &ae) {
		ra := 0
		if ae.Status == fasthttp.StatusServiceUnavailable || ae.Status == fasthttp.StatusTooManyRequests {
			ra = cmp.Or(ae.RetryAfter, defaultRetryAfter)
		}
		return ae.Status, detail{ae.Detail}, ra
	}
	if store.Unavailable(err) {
		h.log.LogAttrs(c.ctx, slog.LevelWarn, "admin request failed: the store is unavailable",
			slog.String("method", c.req.Method), slog.String("path", c.req.Path), slog.String("err", err.Error()))
		return fasthttp.StatusServiceUnavailable, detail{"The account store is unavailable right now; retry shortly."}, storeRetryAfter
	}
	h.log.LogAttrs(c.ctx, slog.LevelError, "admin request failed",
		slog.String("method", c.req.Method), slog.String("path", c.req.Path), slog.String("err", err.Error()))
	return fasthttp.StatusInternalServerError, detail{"internal error"}, 0
}

// record writes the admin audit log entry of a change. A failure to record
// is logged but does not undo the change the caller already made.
func (h *Handler) record(c *call, action, targetType string, targetID int64, det any) {
	raw, err := json.Marshal(det)
	if err != nil || det == nil {
		raw = []byte("{}")
	}
	e := &store.AdminEvent{
		At: h.now().UTC(), ActorID: c.p.UserID, ActorKey: c.p.KeyID, Action: action,
		TargetType: targetType, TargetID: itoa(targetID), Detail: string(raw), RemoteAddr: c.req.RemoteAddr,
	}
	if err := h.st.RecordAdmin(c.ctx, e); err != nil {
		h.log.LogAttrs(c.ctx, slog.LevelError, "record admin event", slog.String("action", action), slog.String("err", err.Error()))
	}
	h.log.LogAttrs(c.ctx, slog.LevelInfo, "admin action", slog.String("action", action),
		slog.String("target", targetType+":"+e.TargetID), slog.Int64("actor_user", c.p.UserID), slog.String("actor_key", c.p.KeyID))
}

func trimSlash(p string) string {
	if len(p) > 1 {
		return strings.TrimSuffix(p, "/")
	}
	return p
}
