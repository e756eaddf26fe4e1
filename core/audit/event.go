// Package audit records every request: the server's Outcome becomes an
// Event, appended to a local write-ahead spool without blocking the
// request, then written in batches to ClickHouse (or, for one gateway
// with no ClickHouse, an embedded sink) and readable through the admin
// API. Nothing accepted is lost: the spool is replayed after a crash.
package audit

import "time"

// Event is one audit row. Its fields but Blobs map one to one onto the
// columns of the ClickHouse table mindrouter.requests (Columns, in
// order); the embedded sink stores the same fields.
type Event struct {
	RequestID string    // the gateway's request id (X-Request-ID), unique
	Time      time.Time // request start, UTC, microseconds
	Replica   string    // the gateway process that served it

	// Who.
	UserID    int64
	User      string
	Group     string
	KeyID     string // the key's display id (prefix), never the key
	ClientIP  string // after the trusted-proxy rules
	UserAgent string

	// What.
	Dialect string // client API format: openai, anthropic, ollama
	Route   string // route name from the translator's manifest
	Kind    string // endpoint kind: chat, embedding, models, …
	Model   string
	Stream  bool

	// Where.
	Backend  string
	Node     string
	GPUs     string // comma-separated GPU indices of the backend
	Attempts uint8

	// How it ended.
	Status       uint16
	ErrorCode    string
	Error        string
	FinishReason string
	ClientGone   bool
	// State is how far the request got (RowStarted … RowPanic): a row is
	// written at admission and completed when the request finishes, so a
	// request the gateway never finished still has one.
	State string

	PromptTokens     uint32
	CompletionTokens uint32
	ReasoningTokens  uint32
	CachedTokens     uint32
	TokensEstimated  bool // the backend reported no usage

	// Timings, microseconds: the whole request, then each pipeline stage
	// (outcome.Stage order), and time to first token for streams.
	TotalUs   uint32
	AuthUs    uint32
	LimitUs   uint32
	ReadUs    uint32
	CheckUs   uint32
	DecodeUs  uint32
	QueueUs   uint32 // admission: waiting for a backend slot (fairness delay included)
	EncodeUs  uint32
	BackendUs uint32
	RespondUs uint32
	TTFTUs    uint32
	// FairnessDelayUs is the part of QueueUs the fair-share order cost
	// (0 when no decision was recorded); StreamPluginUs the part of
	// RespondUs a stream's plugin calls took.
	FairnessDelayUs uint32
	StreamPluginUs  uint32

	Chunks   uint32
	BytesIn  uint64
	BytesOut uint64

	// Content, unless audit.content is off; bounded by
	// audit.max_content_bytes (ContentTruncated says a part was cut).
	RequestBody      string
	ResponseBody     string
	ContentTruncated bool

	// Decision is the scheduler's decision as JSON (candidates, scores,
	// failed constraints, the user's deficit and weight), "" when none.
	Decision string
	// EnergyJ estimates the GPU energy of the request in joules from the
	// node's power readings, 0 when unknown.
	EnergyJ float64

	// Blobs are the base64 payloads (images) taken out of the content,
	// which holds references to them (BlobPrefix); they go to the blobs
	// table, not to a column of requests. Filled by the recorder off the
	// request path; nil when none.
	Blobs []Blob

	// Until is set only on an interruption marker (RowInterruptMark):
	// the marker stands for every row its Replica left RowStarted with a
	// time before Until, which the sink turns into RowInterrupted.
	Until time.Time
}

// The values of Event.State and of the state column.
const (
	// RowStarted: admitted, not finished yet (in flight), or its gateway
	// stopped and has not restarted on its spool since.
	RowStarted = "started"
	// RowFinished: the request ended and its row is complete (any status).
	RowFinished = "finished"
	// RowInterrupted: admitted, but its gateway stopped (killed, crashed)
	// before it finished; the row holds what was known at admission.
	RowInterrupted = "interrupted"
	// RowPanic: the handler panicked; the client got a 500.
	RowPanic = "panic"
	// RowInterruptMark is not a row: a spooled marker a restarted
	// gateway writes for the previous process on its spool (Until).
	RowInterruptMark = "interrupt-mark"
)

// rowState is e's state as stored: RowFinished when unset.
func rowState(e *Event) string {
	if e.State == "" {
		return RowFinished
	}
	return e.State
}

// Columns are the ClickHouse columns of Event, in field order: inserts
// name them explicitly.
var Columns = []string{
	"request_id", "time", "replica",
	"user_id", "user", "group", "key_id", "client_ip", "user_agent",
	"dialect", "route", "kind", "model", "stream",
	"backend", "node", "gpus", "attempts",
	"status", "error_code", "error", "finish_reason", "client_gone", "state",
	"prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens", "tokens_estimated",
	"total_us", "auth_us", "limit_us", "read_us", "check_us", "decode_us", "queue_us", "encode_us", "backend_us", "respond_us", "ttft_us",
	"fairness_delay_us", "stream_plugin_us",
	"chunks", "bytes_in", "bytes_out",
	"request_body", "response_body", "content_truncated",
	"decision", "energy_j",
}
