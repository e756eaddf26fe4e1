package fakellm

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Engine names accepted in Config.Engine.
const (
	EngineVLLM   = "vllm"
	EngineOllama = "ollama"
)

// Defaults used when the matching Config field is zero.
const (
	DefaultTokens          = 16
	DefaultReasoningTokens = 8
	DefaultMaxModelLen     = 32768
	DefaultEmbeddingDim    = 384
	DefaultOllamaNumCtx    = 4096
	DefaultVLLMVersion     = "0.11.0"
	DefaultOllamaVersion   = "0.12.6"
)

// DefaultModels is the model list served when Config.Models is empty.
var DefaultModels = []string{"qwen3-8b", "llama3.1-8b"}

// Config configures a Server. The zero value is usable: a vLLM engine serving
// DefaultModels as fast as possible with no faults.
type Config struct {
	// Engine is the wire format to speak: "vllm" (default) or "ollama".
	Engine string
	// Models are the served model names. Names containing qwen3,
	// deepseek-r1 or gpt-oss are reasoning ("thinking") models.
	Models []string
	// VisionByName makes Ollama's /api/show list "vision" only for models
	// named as Ollama's vision models are (llava, *vision*, *-vl; llava
	// then without "tools", as Ollama's has none). Off, every chat model
	// lists it. Either way every model accepts images: the gateway must
	// refuse them for a model without vision before they get here.
	VisionByName bool

	// TTFT is the delay from the moment a request holds an engine slot to its
	// first token (prefill time).
	TTFT time.Duration
	// TPS is the decode speed of each stream in tokens per second; 0 means as
	// fast as possible.
	TPS float64
	// MaxConcurrent is the number of requests generated at once. Further
	// requests queue (first come, first served) until a slot frees, as vLLM's
	// scheduler and Ollama's OLLAMA_NUM_PARALLEL do; queued requests show up
	// in vllm:num_requests_waiting. 0 means unlimited.
	MaxConcurrent int

	// Tokens is the natural completion length in tokens (one token = one
	// word) when the request sets no smaller limit. 0 means DefaultTokens.
	Tokens int
	// ReasoningTokens is the length of the reasoning part when thinking is
	// on. 0 means DefaultReasoningTokens.
	ReasoningTokens int
	// DefaultThinking makes thinking models think when the request does not
	// say, as Qwen3's chat template and Ollama (for thinking-capable models)
	// do. Off by default so that plain requests get plain content.
	DefaultThinking bool
	// ThinkInContent makes thinking models write their reasoning inside the
	// content as <think>…</think> (the tags cut across tokens) instead of
	// in the reasoning field: a reasoning model served by vLLM without
	// --reasoning-parser, or by an Ollama that does not parse its thinking.
	ThinkInContent bool

	// ErrorRate is the fraction of inference requests answered with HTTP 500
	// in the engine's error shape.
	ErrorRate float64
	// HangRate is the fraction of inference requests that never answer (no
	// status line) until the client disconnects or the server closes.
	HangRate float64
	// DropRate is the fraction of inference requests whose connection is
	// closed mid-response: streams after about half of their tokens,
	// non-streaming requests before the response.
	DropRate float64
	// ToolTurns, when positive, is how many tool calls a conversation
	// gets: once its history holds that many assistant turns with tool
	// calls, the model answers in text. Agents whose every turn the fake
	// would otherwise answer with a call of a tool it picks (Claude
	// Code's subagents report back as new user turns) then end their
	// task. 0: no bound.
	ToolTurns int
	// Seed seeds the fault-injection random source, so a given sequence of
	// requests meets the same faults. Generated text does not depend on it.
	Seed int64

	// NoTokenize makes /tokenize and /detokenize answer 404, as a vLLM
	// behind a proxy that routes only the /v1 API does.
	NoTokenize bool

	// MaxModelLen is the context length reported by /v1/models, /tokenize and
	// /api/show and enforced on vLLM requests. 0 means DefaultMaxModelLen.
	MaxModelLen int
	// EmbeddingDim is the length of embedding vectors. 0 means
	// DefaultEmbeddingDim.
	EmbeddingDim int
	// Version is reported by GET /version (vLLM) or GET /api/version
	// (Ollama). Empty means DefaultVLLMVersion or DefaultOllamaVersion.
	Version string

	// Logger receives request logs (Debug) and server errors. nil means
	// slog.Default().
	Logger *slog.Logger
}

// withDefaults validates c and returns a copy with defaults filled in.
func (c Config) withDefaults() (Config, error) {
	c.Engine = strings.ToLower(strings.TrimSpace(c.Engine))
	switch c.Engine {
	case "":
		c.Engine = EngineVLLM
	case EngineVLLM, EngineOllama:
	default:
		return c, fmt.Errorf("fakellm: unknown engine %q (want %q or %q)", c.Engine, EngineVLLM, EngineOllama)
	}
	models := make([]string, 0, len(c.Models))
	seen := map[string]bool{}
	for _, m := range c.Models {
		m = strings.TrimSpace(m)
		if m == "" || seen[m] {
			continue
		}
		seen[m] = true
		models = append(models, m)
	}
	if len(models) == 0 {
		models = append(models, DefaultModels...)
	}
	c.Models = models
	if c.TTFT < 0 {
		return c, errors.New("fakellm: TTFT must not be negative")
	}
	if c.TPS < 0 {
		return c, errors.New("fakellm: TPS must not be negative")
	}
	if c.MaxConcurrent < 0 {
		return c, errors.New("fakellm: MaxConcurrent must not be negative")
	}
	if c.Tokens < 0 || c.ReasoningTokens < 0 {
		return c, errors.New("fakellm: Tokens and ReasoningTokens must not be negative")
	}
	if c.Tokens == 0 {
		c.Tokens = DefaultTokens
	}
	if c.ReasoningTokens == 0 {
		c.ReasoningTokens = DefaultReasoningTokens
	}
	for name, r := range map[string]float64{"ErrorRate": c.ErrorRate, "HangRate": c.HangRate, "DropRate": c.DropRate} {
		if r < 0 || r > 1 || r != r {
			return c, fmt.Errorf("fakellm: %s must be within [0, 1], got %v", name, r)
		}
	}
	if c.MaxModelLen < 0 || c.EmbeddingDim < 0 {
		return c, errors.New("fakellm: MaxModelLen and EmbeddingDim must not be negative")
	}
	if c.MaxModelLen == 0 {
		c.MaxModelLen = DefaultMaxModelLen
	}
	if c.EmbeddingDim == 0 {
		c.EmbeddingDim = DefaultEmbeddingDim
	}
	if c.Version == "" {
		if c.Engine == EngineOllama {
			c.Version = DefaultOllamaVersion
		} else {
			c.Version = DefaultVLLMVersion
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// isThinkingModel reports whether name looks like a reasoning model.
func isThinkingModel(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "qwen3") || strings.Contains(n, "deepseek-r1") || strings.Contains(n, "gpt-oss")
}
