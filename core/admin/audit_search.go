package admin

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/audit"
)

// maxSearchText bounds the search parameter: a substring scan of every
// row's content is already the costliest query the API offers.
const maxSearchText = 1000

// auditSearch is GET /audit/search: the request audit, newest first,
// filtered by the reference's parameters (user_id, model, status,
// start_date, end_date, search_text, skip, limit ≤ 1000), with user (the
// user's name) and search as shorter aliases. Results carry no content;
// GET /audit/{request_id} has it.
func (h *Handler) auditSearch(c *call) (any, error) {
	if h.audit == nil {
		return nil, errAuditOff
	}
	q, err := c.auditQuery()
	if err != nil {
		return nil, err
	}
	evs, total, err := h.audit.Search(c.ctx, q)
	if err != nil {
		return nil, fmt.Errorf("search the request audit: %w", err)
	}
	out := make([]auditRow, 0, len(evs))
	for i := range evs {
		out = append(out, viewAuditRow(&evs[i]))
	}
	return map[string]any{"results": out, "total": total, "skip": q.Skip, "limit": q.Limit}, nil
}

// auditGet is GET /audit/{request_id}: one request's event in full.
func (h *Handler) auditGet(c *call) (any, error) {
	if h.audit == nil {
		return nil, errAuditOff
	}
	segs := strings.Split(trimSlash(c.req.Path), "/")
	id := segs[len(segs)-1]
	if len(id) > 200 {
		return nil, badRequest("path parameter request_id: longer than 200 bytes")
	}
	e, err := h.audit.Get(c.ctx, id)
	if errors.Is(err, audit.ErrNotFound) {
		return nil, notFound("no request " + strconv.Quote(id) + " in the audit")
	}
	if err != nil {
		return nil, fmt.Errorf("read request %q from the audit: %w", id, err)
	}
	return viewAuditEvent(&e), nil
}

// auditBlob is GET /audit/blobs/{sha256}: an image the audit stored once
// and referred to from recorded content ("mr-blob:sha256:<hex>;…"), as
// {sha256, media_type, size, data_base64}.
func (h *Handler) auditBlob(c *call) (any, error) {
	br, ok := h.audit.(audit.BlobReader)
	if h.audit == nil || !ok {
		return nil, errAuditOff
	}
	segs := strings.Split(trimSlash(c.req.Path), "/")
	sum := segs[len(segs)-1]
	b, err := br.Blob(c.ctx, sum)
	switch {
	case errors.Is(err, audit.ErrBadHash):
		return nil, badRequest("path parameter sha256: 64 lowercase hex digits")
	case errors.Is(err, audit.ErrNotFound):
		return nil, notFound("no blob " + strconv.Quote(logTrunc(sum)) + " in the audit")
	case err != nil:
		return nil, fmt.Errorf("read blob from the audit: %w", err)
	}
	return map[string]any{"sha256": b.SHA256, "media_type": b.MediaType, "size": len(b.Data),
		"data_base64": base64.StdEncoding.EncodeToString([]byte(b.Data))}, nil
}

// logTrunc bounds a client-given path segment quoted back in an error.
func logTrunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

var errAuditOff = errorf(fasthttp.StatusServiceUnavailable,
	"the request audit is not available on this gateway: audit is disabled or its store is not configured")

// auditQuery reads the search parameters; a bad one is a 400 naming it.
func (c *call) auditQuery() (audit.Query, error) {
	var q audit.Query
	var err error
	if q.Skip, err = c.queryInt("skip", 0, 0, 1<<30); err != nil {
		return q, err
	}
	if q.Limit, err = c.queryInt("limit", audit.DefaultLimit, 1, audit.MaxLimit); err != nil {
		return q, err
	}
	if q.UserID, err = c.queryID("user_id"); err != nil {
		return q, err
	}
	if q.User, err = c.queryText("user", 200); err != nil {
		return q, err
	}
	if q.Model, err = c.queryText("model", 200); err != nil {
		return q, err
	}
	for _, name := range []string{"search", "search_text"} {
		s, err := c.queryText(name, maxSearchText)
		if err != nil {
			return q, err
		}
		if s != "" {
			q.Text = s
		}
	}
	if s := c.req.Query.Get("status"); s != "" {
		switch s = strings.ToLower(s); s {
		case audit.StateCompleted, audit.StateFailed, audit.RowStarted, audit.RowInterrupted, audit.RowPanic:
			q.State = s
		default:
			n, err := strconv.Atoi(s)
			if err != nil || n < 100 || n > 999 {
				return q, badRequest("query parameter status: must be an HTTP status (100-999), completed, failed, started, interrupted or panic")
			}
			q.Status = n
		}
	}
	if q.From, err = c.queryDate("start_date", false); err != nil {
		return q, err
	}
	if q.To, err = c.queryDate("end_date", true); err != nil {
		return q, err
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		return q, badRequest("query parameters start_date, end_date: start_date must be before end_date")
	}
	return q, nil
}

// queryDate reads a date (2026-03-10, UTC) or an RFC 3339 time. A date
// as the end of a range includes that whole day.
func (c *call) queryDate(name string, end bool) (time.Time, error) {
	s := c.req.Query.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseInLocation(time.DateOnly, s, time.UTC); err == nil {
		if end {
			d = d.AddDate(0, 0, 1)
		}
		return d, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02 15:04:05.999999"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, badRequest("query parameter " + name + ": expected a date (2026-03-10) or an RFC 3339 time (2026-03-10T14:00:00Z)")
}

// auditRow is one search result: the reference's audit row (request_uuid,
// endpoint, is_streaming, status, the token counts, total_time_ms,
// queue_delay_ms, error_message, client_ip, user_agent) with MindRouter's
// further fields.
type auditRow struct {
	RequestID        string    `json:"request_id"`
	RequestUUID      string    `json:"request_uuid"` // the reference's name for it
	CreatedAt        time.Time `json:"created_at"`
	Replica          string    `json:"replica"`
	UserID           int64     `json:"user_id"`
	User             string    `json:"user"`
	Group            string    `json:"group"`
	KeyID            string    `json:"api_key"`
	ClientIP         string    `json:"client_ip"`
	UserAgent        string    `json:"user_agent"`
	Dialect          string    `json:"dialect"`
	Endpoint         string    `json:"endpoint"`
	Kind             string    `json:"kind"`
	Model            string    `json:"model"`
	Stream           bool      `json:"is_streaming"`
	Status           string    `json:"status"` // completed, failed, started, interrupted or panic
	StatusCode       uint16    `json:"status_code"`
	ErrorCode        string    `json:"error_code"`
	Error            string    `json:"error_message"`
	FinishReason     string    `json:"finish_reason"`
	ClientGone       bool      `json:"client_disconnected"`
	Backend          string    `json:"backend"`
	Node             string    `json:"node"`
	GPUs             string    `json:"gpus"`
	Attempts         uint8     `json:"attempts"`
	PromptTokens     uint32    `json:"prompt_tokens"`
	CompletionTokens uint32    `json:"completion_tokens"`
	ReasoningTokens  uint32    `json:"reasoning_tokens"`
	CachedTokens     uint32    `json:"cached_tokens"`
	TotalTokens      uint64    `json:"total_tokens"`
	TokensEstimated  bool      `json:"tokens_estimated"`
	TotalMs          float64   `json:"total_time_ms"`
	QueueMs          float64   `json:"queue_delay_ms"`
	TTFTMs           float64   `json:"ttft_ms"`
	StagesUs         stagesUs  `json:"stages_us"`
	Chunks           uint32    `json:"chunk_count"`
	BytesIn          uint64    `json:"bytes_in"`
	BytesOut         uint64    `json:"bytes_out"`
	EnergyJ          float64   `json:"energy_j"`
}

// stagesUs are the per-stage timings in microseconds.
type stagesUs struct {
	Auth    uint32 `json:"auth"`
	Limit   uint32 `json:"limit"`
	Read    uint32 `json:"read"`
	Check   uint32 `json:"check"`
	Decode  uint32 `json:"decode"`
	Queue   uint32 `json:"queue"`
	Encode  uint32 `json:"encode"`
	Backend uint32 `json:"backend"`
	Respond uint32 `json:"respond"`
	TTFT    uint32 `json:"ttft"`
	Total   uint32 `json:"total"`
	// Parts of queue and respond: the fair-share order's delay, a stream's plugin calls.
	FairnessDelay uint32 `json:"fairness_delay"`
	StreamPlugin  uint32 `json:"stream_plugin"`
}

// auditEvent is GET /audit/{request_id}: the row plus the content and the
// scheduler's decision (JSON as stored; null when there was none).
type auditEvent struct {
	auditRow
	RequestBody      string          `json:"request_body"`
	ResponseBody     string          `json:"response_body"`
	ContentTruncated bool            `json:"content_truncated"`
	Decision         json.RawMessage `json:"decision"`
}

func viewAuditRow(e *audit.Event) auditRow {
	// A row the gateway never finished says so: started (in flight, or
	// its gateway has not restarted since), interrupted, panic.
	state := audit.StateCompleted
	switch {
	case e.State != "" && e.State != audit.RowFinished:
		state = e.State
	case e.Status >= 400:
		state = audit.StateFailed
	}
	return auditRow{
		RequestID: e.RequestID, RequestUUID: e.RequestID, CreatedAt: e.Time.UTC(), Replica: e.Replica,
		UserID: e.UserID, User: e.User, Group: e.Group, KeyID: e.KeyID, ClientIP: e.ClientIP, UserAgent: e.UserAgent,
		Dialect: e.Dialect, Endpoint: e.Route, Kind: e.Kind, Model: e.Model, Stream: e.Stream,
		Status: state, StatusCode: e.Status, ErrorCode: e.ErrorCode, Error: e.Error, FinishReason: e.FinishReason, ClientGone: e.ClientGone,
		Backend: e.Backend, Node: e.Node, GPUs: e.GPUs, Attempts: e.Attempts,
		PromptTokens: e.PromptTokens, CompletionTokens: e.CompletionTokens, ReasoningTokens: e.ReasoningTokens, CachedTokens: e.CachedTokens,
		TotalTokens: uint64(e.PromptTokens) + uint64(e.CompletionTokens), TokensEstimated: e.TokensEstimated,
		TotalMs: ms(e.TotalUs), QueueMs: ms(e.QueueUs), TTFTMs: ms(e.TTFTUs),
		StagesUs: stagesUs{
			Auth: e.AuthUs, Limit: e.LimitUs, Read: e.ReadUs, Check: e.CheckUs, Decode: e.DecodeUs, Queue: e.QueueUs,
			Encode: e.EncodeUs, Backend: e.BackendUs, Respond: e.RespondUs, TTFT: e.TTFTUs, Total: e.TotalUs,
			FairnessDelay: e.FairnessDelayUs, StreamPlugin: e.StreamPluginUs,
		},
		Chunks: e.Chunks, BytesIn: e.BytesIn, BytesOut: e.BytesOut, EnergyJ: e.EnergyJ,
	}
}

func viewAuditEvent(e *audit.Event) auditEvent {
	v := auditEvent{auditRow: viewAuditRow(e), RequestBody: e.RequestBody, ResponseBody: e.ResponseBody, ContentTruncated: e.ContentTruncated}
	if e.Decision != "" && json.Valid([]byte(e.Decision)) {
		v.Decision = json.RawMessage(e.Decision)
	} else if e.Decision != "" {
		// Not JSON (it always should be): keep it, as a string.
		v.Decision, _ = json.Marshal(e.Decision)
	}
	return v
}

func ms(us uint32) float64 { return float64(us) / 1000 }
