package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/plugcall"
)

// Exact counts from vLLM. Near the context limit (context.go) a request
// bound for a vLLM backend is counted by that backend's own tokenizer and
// chat template: POST /tokenize with vLLM's TokenizeChatRequest
// (vllm/entrypoints/serve/tokenize/protocol.py: model, messages,
// add_generation_prompt, continue_final_message, chat_template,
// chat_template_kwargs, tools; answer TokenizeResponse {count,
// max_model_len, tokens}). The messages are taken from the vLLM adapter's
// own encoding of the request, so /tokenize sees exactly what
// /v1/chat/completions will (content parts, images inlined, tool calls,
// enable_thinking) without a second encoder in the host; only the fields
// TokenizeChatRequest knows are copied (vLLM would accept the rest but log
// "fields were present in the request but ignored" for each call).
//
// Counts are memoised per (backend, model, SHA-256 of the /tokenize body):
// a client that resends the same request near the limit (retries, the
// same long prompt from several users) costs one call. Any failure (no
// answer within vllmCountTimeout, non-200, a body without a count: an
// older vLLM, a proxy that routes only /v1) falls back to the offline
// count, never failing the request.

const (
	// vllmCountTimeout bounds one /tokenize call: tokenizing is
	// milliseconds on the API server, so anything slower is a backend in
	// trouble and the offline count will do.
	vllmCountTimeout = 2 * time.Second
	// vllmMemoSize bounds the memo: ~100 bytes an entry.
	vllmMemoSize = 4096
	// vllmCountBackoff: a backend whose /tokenize is absent (404, 405,
	// 501) or unreachable or slow is not asked again for this long, so
	// that a near-limit request does not pay a failing round trip each.
	vllmCountBackoff = 30 * time.Second
)

// errNoCount: /tokenize answered without a usable count.
var errNoCount = errors.New("no token count in the answer")

// tokenizeParsers parse the adapter's chat bodies and /tokenize answers.
var tokenizeParsers fastjson.ParserPool

// tokenizeFields are the TokenizeChatRequest fields copied from the
// adapter's chat body; add_generation_prompt defaults to true as in vLLM.
var tokenizeFields = [...]string{"messages", "tools", "chat_template", "chat_template_kwargs",
	"continue_final_message", "add_generation_prompt", "mm_processor_kwargs", "media_io_kwargs"}

// appendTokenizeBody writes the /tokenize body for an OpenAI chat body as
// the vLLM adapter encoded it (its model is the backend's name for it).
func appendTokenizeBody(dst, chat []byte) ([]byte, error) {
	p := tokenizeParsers.Get()
	defer tokenizeParsers.Put(p)
	v, err := p.ParseBytes(chat)
	if err != nil {
		return dst, fmt.Errorf("parse the adapter's chat body: %w", err)
	}
	m := v.Get("model")
	if v.Get("messages") == nil || m == nil || m.Type() != fastjson.TypeString {
		return dst, errors.New("the adapter's chat body has no model or messages")
	}
	dst = m.MarshalTo(append(dst, `{"model":`...))
	genPrompt := false
	for _, k := range tokenizeFields {
		f := v.Get(k)
		if f == nil || f.Type() == fastjson.TypeNull {
			continue
		}
		genPrompt = genPrompt || k == "add_generation_prompt"
		if k == "continue_final_message" && f.Type() == fastjson.TypeTrue {
			genPrompt = true // vLLM refuses both true: the default must not be added
		}
		dst = append(dst, ',', '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
		dst = f.MarshalTo(dst)
	}
	if !genPrompt {
		dst = append(dst, `,"add_generation_prompt":true`...)
	}
	return append(dst, '}'), nil
}

// parseTokenizeResponse reads TokenizeResponse's count and max_model_len
// (0 when absent).
func parseTokenizeResponse(body []byte) (count, maxLen int, err error) {
	p := tokenizeParsers.Get()
	defer tokenizeParsers.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", errNoCount, err)
	}
	c := v.Get("count")
	if c == nil {
		return 0, 0, errNoCount
	}
	n, err := c.Int()
	if err != nil || n < 0 {
		return 0, 0, errNoCount
	}
	return n, v.GetInt("max_model_len"), nil
}

// vllmCount is one memoised answer.
type vllmCount struct{ count, maxLen int }

type countKey struct {
	backend, model string
	sum            [sha256.Size]byte
}

// countMemo is a bounded map of /tokenize answers with CLOCK eviction
// (an entry hit since the hand last passed survives one more sweep): LRU's
// hit rate without moving anything on a hit. Safe for concurrent use; a
// hit allocates nothing.
type countMemo struct {
	mu    sync.Mutex
	index map[countKey]int // → slots
	slots []memoSlot
	hand  int
	max   int
	// until: backends not to ask before then (vllmCountBackoff); one
	// entry per backend name, so bounded by the configuration.
	until map[string]time.Time
}

type memoSlot struct {
	key countKey
	val vllmCount
	ref bool
}

func newCountMemo(max int) *countMemo {
	return &countMemo{index: make(map[countKey]int, max), max: max, until: map[string]time.Time{}}
}

// usable says whether backend may be asked now.
func (m *countMemo) usable(backend string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.until[backend]
	if ok && !now.Before(u) {
		delete(m.until, backend)
	}
	return !ok || !now.Before(u)
}

// backOff stops asking backend until then.
func (m *countMemo) backOff(backend string, until time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.until[backend] = until
}

func (m *countMemo) get(k countKey) (vllmCount, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := m.index[k]
	if !ok {
		return vllmCount{}, false
	}
	m.slots[i].ref = true
	return m.slots[i].val, true
}

func (m *countMemo) put(k countKey, v vllmCount) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i, ok := m.index[k]; ok {
		m.slots[i].val = v
		return
	}
	if len(m.slots) < m.max {
		m.index[k] = len(m.slots)
		m.slots = append(m.slots, memoSlot{key: k, val: v})
		return
	}
	for m.slots[m.hand].ref { // at most one lap: each pass clears a bit
		m.slots[m.hand].ref = false
		m.hand = (m.hand + 1) % m.max
	}
	delete(m.index, m.slots[m.hand].key)
	m.slots[m.hand] = memoSlot{key: k, val: v}
	m.index[k] = m.hand
	m.hand = (m.hand + 1) % m.max
}

func (m *countMemo) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.slots)
}

// vllmCount asks backend b's vLLM for the exact input count of the
// request (ex.canon, decoded), memoised. ok is false when it could not:
// the caller counts offline. Only called near the context limit.
func (ex *exchange) vllmCount(b *backend.Backend, ctxLen int) (vllmCount, bool) {
	s := ex.s
	var chat plugcall.BackendRequest
	err := ex.withImages(func() error {
		// The adapter's body without an output cap: only its messages,
		// tools and template arguments are used.
		return ex.calls.EncodeRequest(ex.ctx, ex.aver, ex.canon, plugcall.Hints{ContextLength: ctxLen}, &chat)
	})
	if err != nil {
		s.countFallback(ex, b, "encode the chat body", err)
		return vllmCount{}, false
	}
	body, err := appendTokenizeBody(nil, chat.Body)
	if err != nil {
		s.countFallback(ex, b, "build the /tokenize body", err)
		return vllmCount{}, false
	}
	key := countKey{backend: b.Name, model: ex.req.Model, sum: sha256.Sum256(body)}
	if v, ok := s.vllmMemo.get(key); ok {
		return v, true
	}
	now := time.Now()
	if !s.vllmMemo.usable(b.Name, now) {
		return vllmCount{}, false
	}
	v, err := tokenizeOn(ex.ctx, b, ex.id, body)
	if err != nil {
		if backendWide(err) && ex.ctx.Err() == nil {
			s.vllmMemo.backOff(b.Name, now.Add(vllmCountBackoff))
		}
		s.countFallback(ex, b, "POST /tokenize", err)
		return vllmCount{}, false
	}
	s.vllmMemo.put(key, v)
	return v, true
}

// tokenizeOn posts body to b's /tokenize within vllmCountTimeout.
func tokenizeOn(ctx context.Context, b *backend.Backend, reqID string, body []byte) (vllmCount, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURIBytes(b.AppendURL(nil, "/tokenize"))
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.Set("X-Request-ID", reqID)
	req.SetBody(body)
	if err := b.DoContext(ctx, req, resp, vllmCountTimeout); err != nil {
		return vllmCount{}, err
	}
	if code := resp.StatusCode(); code != fasthttp.StatusOK {
		return vllmCount{}, tokenizeStatus(code)
	}
	n, maxLen, err := parseTokenizeResponse(resp.Body())
	return vllmCount{count: n, maxLen: maxLen}, err
}

// tokenizeStatus is a /tokenize answer other than 200.
type tokenizeStatus int

func (c tokenizeStatus) Error() string { return "HTTP " + strconv.Itoa(int(c)) }

// backendWide says whether a /tokenize failure is the backend's, not this
// request's: no such route, or no answer in time. A 400 about one
// request's messages, or a 500, leaves the next request free to ask.
func backendWide(err error) bool {
	var st tokenizeStatus
	if errors.As(err, &st) {
		return st == fasthttp.StatusNotFound || st == fasthttp.StatusMethodNotAllowed || st == fasthttp.StatusNotImplemented
	}
	return !errors.Is(err, errNoCount) // else a transport error or timeout
}

// countFallback notes, at debug level, why a vLLM count was not had.
func (s *Server) countFallback(ex *exchange, b *backend.Backend, what string, err error) {
	if !s.log.Enabled(ex.ctx, slog.LevelDebug) {
		return
	}
	s.log.LogAttrs(ex.ctx, slog.LevelDebug, "vLLM token count unavailable; counting offline",
		slog.String("req_id", ex.id), slog.String("backend", b.Name), slog.String("step", what),
		slog.String("error", err.Error()))
}
