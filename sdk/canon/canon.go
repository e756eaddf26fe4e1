// Package canon is MindRouter's canonical schema: the one shape every client
// format is translated into and every backend adapter translates out of.
//
// Translators (OpenAI, Anthropic, Ollama in) produce and consume these types;
// adapters (vLLM, Ollama out) consume and produce them. Between a plugin and
// the gateway they travel as JSON written and read by this package's
// reflection-free codec (AppendJSON / Decode*), field names in snake_case.
//
// Conventions:
//   - Tool-call arguments are JSON text in a string, as in OpenAI's API.
//   - Optional sampling parameters are pointers: nil means "not set by the
//     client", which adapters must not confuse with zero.
//   - MaxTokens is already resolved: a translator that sees both
//     max_completion_tokens and max_tokens stores the former.
//   - Thinking is one normalized field (see Think).
//   - Unknown JSON fields are ignored when decoding, so a newer producer can
//     add fields without breaking an older consumer.
//   - A decoded value's strings (and raw JSON) share one private copy of the
//     input, so keeping any of them keeps all of it; see the codec
//     conventions in codec.go.
package canon

import "encoding/json"

// Role is a message author.
type Role string

// Roles. OpenAI's "developer" is stored as RoleSystem.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Think is the normalized thinking (reasoning) setting.
//
// "" means the client did not say; ThinkOff and ThinkOn are explicit
// booleans; ThinkLow, ThinkMedium and ThinkHigh are effort levels, which
// imply on.
//
// ChatRequest.ThinkOptional says the client's thinking request may go
// unmet: the SDK clears Think and ThinkBudget before the adapter encodes
// when the model's capabilities are known (abi.MetaModelCaps) and lack
// CapThinking, so a model that cannot think answers without instead of the
// backend refusing (Ollama: "does not support thinking"). Anthropic's
// thinking sets it, as Ollama's own Anthropic API relaxes thinking for
// such models; dialects whose API refuses leave it unset.
type Think string

// Thinking settings.
const (
	ThinkUnset  Think = ""
	ThinkOff    Think = "off"
	ThinkOn     Think = "on"
	ThinkLow    Think = "low"
	ThinkMedium Think = "medium"
	ThinkHigh   Think = "high"
)

// Enabled reports whether thinking was requested, and whether the client said
// anything at all.
func (t Think) Enabled() (on, set bool) {
	switch t {
	case ThinkUnset:
		return false, false
	case ThinkOff:
		return false, true
	}
	return true, true
}

// FinishReason uses OpenAI's vocabulary.
type FinishReason string

// Finish reasons.
const (
	FinishNone          FinishReason = ""
	FinishStop          FinishReason = "stop"
	FinishLength        FinishReason = "length"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishContentFilter FinishReason = "content_filter"
)

// PartType says what a content part holds.
type PartType string

// Content part types.
const (
	PartText  PartType = "text"
	PartImage PartType = "image"
)

// Part is one block of message content.
type Part struct {
	Type PartType
	Text string // PartText
	// An image is either a URL (http(s)) or inline base64 Data with its
	// MediaType (e.g. "image/png"). Translators turn data: URIs into Data.
	URL       string
	MediaType string
	Data      string
	Detail    string // OpenAI "low" | "high" | "auto", passed through
}

// ToolCall is a call the assistant made.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text
}

// Message is one conversation turn.
type Message struct {
	Role       Role
	Content    []Part
	Name       string
	ToolCalls  []ToolCall // RoleAssistant
	ToolCallID string     // RoleTool: the call this result answers
	Reasoning  string     // RoleAssistant: thinking text, when known
}

// Text concatenates the message's text parts.
func (m *Message) Text() string {
	if len(m.Content) == 1 && m.Content[0].Type == PartText {
		return m.Content[0].Text
	}
	n := 0
	for i := range m.Content {
		n += len(m.Content[i].Text)
	}
	b := make([]byte, 0, n)
	for i := range m.Content {
		if m.Content[i].Type == PartText {
			b = append(b, m.Content[i].Text...)
		}
	}
	return string(b)
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema object; nil when absent
	Strict      bool
}

// ToolChoiceMode says how the model must use tools.
type ToolChoiceMode string

// Tool choice modes.
const (
	ToolChoiceAuto     ToolChoiceMode = "auto"
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required"
	ToolChoiceFunction ToolChoiceMode = "function" // Name says which
)

// ToolChoice constrains tool use.
type ToolChoice struct {
	Mode ToolChoiceMode
	Name string
}

// FormatType is the requested output format.
type FormatType string

// Response formats.
const (
	FormatText       FormatType = "text"
	FormatJSONObject FormatType = "json_object"
	FormatJSONSchema FormatType = "json_schema"
)

// ResponseFormat asks for structured output.
type ResponseFormat struct {
	Type   FormatType
	Name   string          // json_schema name
	Schema json.RawMessage // json_schema schema
	Strict bool
}

// ChatRequest is a chat completion request, or a legacy text completion.
type ChatRequest struct {
	Model    string
	Messages []Message
	// Prompt, when not empty, makes the request a legacy text completion
	// (OpenAI /v1/completions, Ollama's raw generate; added in ABI 2.2):
	// the prompts go to the engine's raw completion endpoint as they are,
	// never through a chat template, and Messages is empty. Each prompt
	// gets N choices, indexed prompt×N+choice as OpenAI does. The response
	// and chunks are the chat ones: a choice's text is its message's or
	// delta's Content. Adapters that cannot complete several prompts in
	// one request refuse more than one.
	Prompt       []string
	Stream       bool
	IncludeUsage bool // the client asked for usage in the stream

	MaxTokens         int // 0: not set
	Temperature       *float64
	TopP              *float64
	TopK              *int
	MinP              *float64
	RepetitionPenalty *float64
	FrequencyPenalty  *float64
	PresencePenalty   *float64
	Seed              *int64
	Stop              []string
	N                 int // 0 or 1: one choice; more: that many choices
	// Logprobs asks for the chosen tokens' log probabilities, TopLogprobs
	// (0: none) for that many alternatives per token as well. Backends
	// that cannot report them refuse the request (added in ABI 2.2).
	Logprobs    bool
	TopLogprobs int

	ResponseFormat    *ResponseFormat
	Think             Think
	ThinkBudget       int  // tokens; 0: not set
	ThinkOptional     bool // the thinking asked for may go unmet (see Think)
	Tools             []Tool
	ToolChoice        *ToolChoice
	ParallelToolCalls *bool

	User string // end-user id the client passed, for audit
	// TruncateOldest (ABI 2.9): an input over the model's context window
	// is not refused; the host drops its oldest turns until it fits,
	// keeping the system messages and the last turn (OpenAI Responses'
	// truncation: "auto").
	TruncateOldest bool
	// ContextLength is the model's context window on the chosen backend,
	// set by the SDK from the host's request_encode meta (discovery knows
	// it); adapters may pass it on (Ollama num_ctx). 0: unknown.
	ContextLength int
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
	ReasoningTokens  int // part of CompletionTokens, when the backend says
	CachedTokens     int // part of PromptTokens, when the backend says
}

// Choice is one alternative of a response.
type Choice struct {
	Index        int
	Message      Message
	FinishReason FinishReason
	// Logprobs is the choice's log probabilities as the backend wrote them,
	// in OpenAI's shape ({"content":[{"token","logprob","bytes",
	// "top_logprobs"}]}), passed through as raw JSON; nil when none (added
	// in ABI 2.2).
	Logprobs json.RawMessage
}

// ChatResponse is a complete (non-streamed) chat completion.
type ChatResponse struct {
	ID      string
	Model   string
	Created int64 // unix seconds
	Choices []Choice
	Usage   *Usage
}

// ToolCallDelta is a piece of a streamed tool call. The first piece of a
// call carries ID and Name; later pieces carry Arguments fragments. Index
// identifies the call within the choice.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// Delta is what one stream chunk adds to a choice.
type Delta struct {
	Role      Role // set on the first chunk of a choice
	Content   string
	Reasoning string
	ToolCalls []ToolCallDelta
}

// ChunkChoice is one choice's part of a stream chunk.
type ChunkChoice struct {
	Index        int
	Delta        Delta
	FinishReason FinishReason
	// Logprobs is the delta's tokens' log probabilities, as Choice.Logprobs
	// (added in ABI 2.2).
	Logprobs json.RawMessage
}

// ChatChunk is one streamed piece of a chat completion. A chunk with no
// choices and a Usage is the final usage report.
type ChatChunk struct {
	ID      string
	Model   string
	Created int64
	Choices []ChunkChoice
	Usage   *Usage
}

// EmbeddingRequest asks for embeddings of one or more inputs.
type EmbeddingRequest struct {
	Model          string
	Input          []string
	Dimensions     int    // 0: model default
	EncodingFormat string // "float" (default) or "base64"; translators apply it
	User           string
}

// EmbeddingResponse holds one vector per input, in input order.
type EmbeddingResponse struct {
	Model   string
	Vectors [][]float32
	Usage   *Usage
}

// ErrorType classifies an error independently of any client dialect.
type ErrorType string

// Error types; translators map them to their dialect's names.
const (
	ErrInvalidRequest  ErrorType = "invalid_request"   // 400
	ErrAuthentication  ErrorType = "authentication"    // 401
	ErrPermission      ErrorType = "permission"        // 403
	ErrNotFound        ErrorType = "not_found"         // 404
	ErrRequestTooLarge ErrorType = "request_too_large" // 413
	ErrRateLimit       ErrorType = "rate_limit"        // 429
	ErrBackend         ErrorType = "backend"           // 502
	ErrOverloaded      ErrorType = "overloaded"        // 503
	ErrTimeout         ErrorType = "timeout"           // 504
	ErrInternal        ErrorType = "internal"          // 500
)

// Error is what a client is told when a request fails.
type Error struct {
	Status    int // HTTP status
	Type      ErrorType
	Code      string // machine-readable detail, e.g. "model_not_found"
	Message   string
	Param     string
	RequestID string
}

// Model is one entry of the model list a client sees.
type Model struct {
	ID            string
	OwnedBy       string
	Created       int64
	ContextLength int
	// Backends names the backends serving the model now, sorted (added in
	// ABI 2.1; empty from older hosts).
	Backends []string
	// Since ABI 2.2, from discovery (the union over the model's backends):
	// whether any backend has it in GPU memory now, its size on disk, its
	// family, and its capabilities (Cap* names, sorted).
	Loaded       bool
	SizeBytes    int64
	Family       string
	Capabilities []string
}

// Capability names a discovered model may report (DiscoveredModel and
// Model Capabilities). Adapters map their engine's words to these.
const (
	CapCompletion = "completion" // chat and text generation
	CapVision     = "vision"     // image input
	CapTools      = "tools"
	CapThinking   = "thinking"
	CapEmbedding  = "embedding"
	CapStructured = "structured_output" // JSON object / schema constrained output
)

// ModelList is the gateway's model list.
type ModelList struct {
	Models []Model
}

// DiscoveredModel is what a backend probe reports about one model.
type DiscoveredModel struct {
	Name          string
	Loaded        bool // in GPU memory now (Ollama /api/ps); vLLM: always
	ContextLength int  // 0: unknown
	SizeBytes     int64
	Family        string
	Capabilities  []string // e.g. "tools", "thinking", "vision", "embedding"
}

// Discovery is what one probe of a backend found. Fields a probe does not
// cover are left zero; Healthy is nil when the probe says nothing about it.
type Discovery struct {
	Healthy *bool
	Models  []DiscoveredModel
	Version string
	// Load, from metrics probes; meaningful only when HasLoad.
	HasLoad      bool
	Running      float64
	Waiting      float64
	KVCacheUsage float64 // 0..1
}
