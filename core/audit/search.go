package audit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is Searcher.Get's answer for a request id with no event.
var ErrNotFound = errors.New("audit: no such request")

// MaxLimit bounds Query.Limit; DefaultLimit is the page size when Limit
// is 0.
const (
	MaxLimit     = 1000
	DefaultLimit = 100
)

// Query selects events for Searcher.Search; zero fields select all.
type Query struct {
	User   string // user name, exact
	UserID int64  // user id, exact (the reference's user_id)
	Model  string // model as the client named it, exact
	Status int    // HTTP status, exact
	// State is "completed" (finished, status below 400) or "failed"
	// (status 400 and up, or interrupted), the reference's two final
	// states; or one row state exactly: RowStarted (in flight, or its
	// gateway has not restarted since), RowInterrupted, RowPanic.
	State string
	// From is inclusive, To exclusive.
	From, To time.Time
	// Text is a case-insensitive (ASCII) substring of the request or
	// response content or the error message.
	Text        string
	Skip, Limit int // Limit 0 is DefaultLimit; at most MaxLimit
}

// Validate reports the first bad field of q, named as the admin API names
// its parameter.
func (q Query) Validate() error {
	switch {
	case q.Skip < 0:
		return fmt.Errorf("skip must be 0 or more")
	case q.Limit < 0 || q.Limit > MaxLimit:
		return fmt.Errorf("limit must be between 1 and %d", MaxLimit)
	case q.Status < 0 || q.Status > 999:
		return fmt.Errorf("status must be an HTTP status (100-999), completed, failed, started, interrupted or panic")
	case q.State != "" && !ValidState(q.State):
		return fmt.Errorf("status must be an HTTP status (100-999), completed, failed, started, interrupted or panic")
	case q.UserID < 0:
		return fmt.Errorf("user_id must be a positive integer")
	case !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To):
		return fmt.Errorf("start_date must be before end_date")
	}
	return nil
}

// The two final states of Query.State.
const (
	StateCompleted = "completed"
	StateFailed    = "failed"
)

// ValidState reports whether s is a value Query.State takes.
func ValidState(s string) bool {
	switch s {
	case StateCompleted, StateFailed, RowStarted, RowInterrupted, RowPanic:
		return true
	}
	return false
}

func (q Query) limit() int {
	if q.Limit == 0 {
		return DefaultLimit
	}
	return q.Limit
}

// Searcher reads the audit table. Search returns the events matching q,
// newest first, without their content (RequestBody, ResponseBody and
// Decision are empty: a page of 1000 full rows could be hundreds of
// megabytes), and the number of matches in all; Get returns one event in
// full. Implementations are safe for concurrent use.
type Searcher interface {
	Search(ctx context.Context, q Query) (events []Event, total int, err error)
	Get(ctx context.Context, requestID string) (Event, error)
}

// listColumns are the columns Search reads: all but the content.
var listColumns = func() []string {
	out := make([]string, 0, len(Columns))
	for _, c := range Columns {
		if !contentColumn(c) {
			out = append(out, c)
		}
	}
	return out
}()

func contentColumn(c string) bool {
	return c == "request_body" || c == "response_body" || c == "decision"
}

// fields returns pointers to the fields of e named by cols, in order, for
// Scan.
func fields(e *Event, cols []string) []any {
	out := make([]any, 0, len(cols))
	for _, c := range cols {
		out = append(out, field(e, c))
	}
	return out
}

func field(e *Event, col string) any {
	switch col {
	case "request_id":
		return &e.RequestID
	case "time":
		return &e.Time
	case "replica":
		return &e.Replica
	case "user_id":
		return &e.UserID
	case "user":
		return &e.User
	case "group":
		return &e.Group
	case "key_id":
		return &e.KeyID
	case "client_ip":
		return &e.ClientIP
	case "user_agent":
		return &e.UserAgent
	case "dialect":
		return &e.Dialect
	case "route":
		return &e.Route
	case "kind":
		return &e.Kind
	case "model":
		return &e.Model
	case "stream":
		return &e.Stream
	case "backend":
		return &e.Backend
	case "node":
		return &e.Node
	case "gpus":
		return &e.GPUs
	case "attempts":
		return &e.Attempts
	case "status":
		return &e.Status
	case "error_code":
		return &e.ErrorCode
	case "error":
		return &e.Error
	case "finish_reason":
		return &e.FinishReason
	case "client_gone":
		return &e.ClientGone
	case "state":
		return &e.State
	case "prompt_tokens":
		return &e.PromptTokens
	case "completion_tokens":
		return &e.CompletionTokens
	case "reasoning_tokens":
		return &e.ReasoningTokens
	case "cached_tokens":
		return &e.CachedTokens
	case "tokens_estimated":
		return &e.TokensEstimated
	case "total_us":
		return &e.TotalUs
	case "auth_us":
		return &e.AuthUs
	case "limit_us":
		return &e.LimitUs
	case "read_us":
		return &e.ReadUs
	case "check_us":
		return &e.CheckUs
	case "decode_us":
		return &e.DecodeUs
	case "queue_us":
		return &e.QueueUs
	case "encode_us":
		return &e.EncodeUs
	case "backend_us":
		return &e.BackendUs
	case "respond_us":
		return &e.RespondUs
	case "ttft_us":
		return &e.TTFTUs
	case "fairness_delay_us":
		return &e.FairnessDelayUs
	case "stream_plugin_us":
		return &e.StreamPluginUs
	case "chunks":
		return &e.Chunks
	case "bytes_in":
		return &e.BytesIn
	case "bytes_out":
		return &e.BytesOut
	case "request_body":
		return &e.RequestBody
	case "response_body":
		return &e.ResponseBody
	case "content_truncated":
		return &e.ContentTruncated
	case "decision":
		return &e.Decision
	case "energy_j":
		return &e.EnergyJ
	}
	panic("audit: no Event field for column " + col)
}
