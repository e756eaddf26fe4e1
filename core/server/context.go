package server

import (
	"errors"
	"log/slog"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/plugcall"
	"github.com/mindrouter/mindrouter/core/tokencount"
	"github.com/mindrouter/mindrouter/core/tokens"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Context capping. A request whose input and requested output come near
// the model's context window on the chosen backend is counted: an input
// that does not fit is a 400 in the client's dialect before the backend
// is asked to generate, and the output is capped to what fits, so it does
// not refuse max_tokens or stop mid-way for lack of room. Far from the
// limit (the common case) nothing is counted: the quick byte estimate
// decides, at no cost.
//
// When the backend's adapter counts tokens (ABI 2.7's count ops; vLLM's
// builds a /tokenize request) the count is the backend's own, with the
// chat template applied: the adapter builds the count request and reads
// the answer, core/tokencount sends it and memoises the answers (exactCount).
// It is exact, so the margin is ctxExactMarginTokens only, against a BOS or
// similar special token that some engine versions add on one path and not
// the other. When the adapter does not count (Ollama's: no tokenize API),
// or the count fails, the gateway's generic tokenizer counts (core/tokens:
// tiktoken cl100k, offline); it is not the model's, so the margin absorbs
// the difference (ctxMarginPct of the input, plus ctxMarginTokens for the
// chat template).
const (
	ctxMarginPct         = 10
	ctxMarginTokens      = 16
	ctxExactMarginTokens = 4
	// nearFraction: an estimate above this share of the window is counted.
	nearNum, nearDen = 3, 4
)

// contextCap returns the output cap for a request on backend b, whose
// model has a context window of ctxLen tokens (0: unknown), or 0 for no
// cap; counting needs the canonical request (canonical).
func (ex *exchange) contextCap(b *backend.Backend, ctxLen int) (int, error) {
	// Responses requests become canonical chat requests too, so they are
	// capped alike (Qwen Code sends max_output_tokens = the window).
	if ctxLen <= 0 || ex.route.kind != sdk.EndpointChat && ex.route.kind != sdk.EndpointResponses {
		return 0, nil
	}
	est := ex.estIn
	if est == 0 {
		est = inputEstimate(ex.body)
		ex.estIn = est
	}
	want := int64(ex.req.MaxTokens)
	if (est+max(want, 0))*nearDen < int64(ctxLen)*nearNum {
		return 0, nil
	}
	if err := ex.canonical(); err != nil {
		return 0, err
	}
	n, room, ctxLen, err := ex.measure(b, ctxLen, est)
	if err != nil || n < 0 {
		return 0, err // n < 0: no tokenizer, left to the backend
	}
	if room < 1 {
		if n, room, err = ex.truncateOldest(b, ctxLen, est, n, room); err != nil {
			return 0, err
		}
	}
	if room < 1 {
		e := apierr.New(canon.ErrInvalidRequest, "context_length_exceeded",
			"the input is about "+itoa(int64(n))+" tokens; model "+ex.req.Model+"'s context window is "+itoa(int64(ctxLen))+
				" tokens: shorten the input")
		e.Param = "messages"
		if ex.route.kind == sdk.EndpointResponses {
			e.Param = "input"
		}
		return 0, e
	}
	if want > 0 && want <= int64(room) {
		return 0, nil
	}
	return room, nil
}

// measure counts the input of the canonical request (ex.canon) for a
// window of ctxLen tokens on b: its tokens n and the room left for
// output, with the margin of the way it was counted (exactly by the
// backend, else offline), and the window (lowered to the engine's own
// limit when its count says so). n is -1 when it cannot be counted.
func (ex *exchange) measure(b *backend.Backend, ctxLen int, est int64) (n, room, window int, err error) {
	if v, ok := ex.exactCount(b, ctxLen); ok {
		if v.MaxLen > 0 {
			ctxLen = min(ctxLen, v.MaxLen) // the engine's own limit, if discovery's is stale
		}
		return v.Tokens, ctxLen - v.Tokens - ctxExactMarginTokens, ctxLen, nil
	}
	var req canon.ChatRequest
	if err := req.DecodeJSON(ex.canon); err != nil {
		return 0, 0, ctxLen, pluginFailure(err)
	}
	n, room, ok := ex.offlineRoom(&req, ctxLen, est)
	if !ok {
		return -1, 0, ctxLen, nil
	}
	return n, room, ctxLen, nil
}

// offlineRoom counts req with the gateway's tokenizer: its tokens and the
// room left in ctxLen with the offline margin; ok is false without a
// tokenizer. An input beyond what the tokenizer counts is taken at the
// byte estimate est.
func (ex *exchange) offlineRoom(req *canon.ChatRequest, ctxLen int, est int64) (n, room int, ok bool) {
	c, err := ex.s.tokens.Chat(req)
	switch {
	case errors.Is(err, tokens.ErrTooLong):
		c = int(est)
	case err != nil:
		return 0, 0, false
	}
	return c, ctxLen - c - c*ctxMarginPct/100 - ctxMarginTokens, true
}

// maxTruncateCounts bounds the backend counts truncateOldest asks for.
const maxTruncateCounts = 8

// truncateOldest makes a request that asked for it (canon
// TruncateOldest: OpenAI Responses' truncation "auto") fit the window by
// dropping its oldest turns (a turn: a user message and the answers and
// tool results up to the next one), keeping the system messages and the
// last turn; the other requests are left as they are (n, room). The
// offline count picks how many turns go, then the request is counted as
// before and a turn more goes while it still does not fit. ex.canon is
// rewritten.
func (ex *exchange) truncateOldest(b *backend.Backend, ctxLen int, est int64, n, room int) (int, int, error) {
	var req canon.ChatRequest
	if err := req.DecodeJSON(ex.canon); err != nil {
		return 0, 0, pluginFailure(err)
	}
	if !req.TruncateOldest {
		return n, room, nil
	}
	dropped := 0
	for {
		_, oroom, ok := ex.offlineRoom(&req, ctxLen, est)
		if ok && oroom >= 1 || !dropOldestTurn(&req) {
			break
		}
		dropped++
	}
	for counts := 0; ; counts++ {
		if dropped > 0 {
			ex.canon = req.AppendJSON(ex.canon[:0])
			var err error
			if n, room, ctxLen, err = ex.measure(b, ctxLen, est); err != nil {
				return 0, 0, err
			}
			if n < 0 {
				return 0, 1, nil // no tokenizer any more: the backend decides
			}
		}
		if room >= 1 || counts >= maxTruncateCounts || !dropOldestTurn(&req) {
			return n, room, nil
		}
		dropped++
	}
}

// dropOldestTurn removes req's oldest turn: the first message that is not
// a system message, and what follows it up to the next user message. It
// reports false, changing nothing, when the last turn is all that is
// left.
func dropOldestTurn(req *canon.ChatRequest) bool {
	m := req.Messages
	i := 0
	for i < len(m) && m[i].Role == canon.RoleSystem {
		i++
	}
	j := i + 1
	for j < len(m) && m[j].Role != canon.RoleUser {
		j++
	}
	if i >= len(m) || j >= len(m) {
		return false
	}
	req.Messages = append(m[:i], m[j:]...)
	return true
}

// outputCap combines the budget's cap (ex.maxOutput) with the context's.
func outputCap(budget, context int) int {
	switch {
	case budget == 0:
		return context
	case context == 0:
		return budget
	}
	return min(budget, context)
}

// exactCount is the backend's own count of the request's input (ex.canon,
// decoded), when its adapter counts tokens and the count succeeds; ok is
// false otherwise and the caller counts offline.
func (ex *exchange) exactCount(b *backend.Backend, ctxLen int) (tokencount.Count, bool) {
	if b == nil || ex.aver == nil {
		return tokencount.Count{}, false
	}
	if m, ok := ex.aver.Manifest().Part(ex.calls.A); !ok || !plugcall.CountsTokens(&m) {
		return tokencount.Count{}, false
	}
	v, err := ex.s.counts.Exact(ex.ctx, b, ex.req.Model, ex.id, ex.countWith(ctxLen))
	if err != nil {
		if !errors.Is(err, tokencount.ErrBackedOff) {
			ex.s.countFallback(ex, b, err)
		}
		return tokencount.Count{}, false
	}
	return v, true
}

// exactCounter is the request's adapter as core/tokencount asks it: its
// count ops through plugcall, on the request at hand.
type exactCounter struct {
	ex     *exchange
	ctxLen int
}

func (ex *exchange) countWith(ctxLen int) *exactCounter {
	ex.counter = exactCounter{ex: ex, ctxLen: ctxLen}
	return &ex.counter
}

func (c *exactCounter) CountRequest() (plugcall.BackendRequest, error) {
	ex := c.ex
	var r plugcall.BackendRequest
	err := ex.withImages(func() error {
		// As the request will be encoded (its thinking switch changes the
		// template), without the output cap.
		h := ex.hints
		h.ContextLength, h.MaxOutput = c.ctxLen, 0
		return ex.calls.EncodeCount(ex.ctx, ex.aver, ex.canon, h, &r)
	})
	return r, err
}

func (c *exactCounter) CountResponse(body []byte) (tokencount.Count, error) {
	n, maxLen, err := c.ex.calls.DecodeCount(c.ex.ctx, c.ex.aver, body)
	return tokencount.Count{Tokens: n, MaxLen: maxLen}, err
}

// countFallback notes, at debug level, why an exact count was not had.
func (s *Server) countFallback(ex *exchange, b *backend.Backend, err error) {
	if !s.log.Enabled(ex.ctx, slog.LevelDebug) {
		return
	}
	s.log.LogAttrs(ex.ctx, slog.LevelDebug, "backend token count unavailable; counting offline",
		slog.String("req_id", ex.id), slog.String("backend", b.Name), slog.String("error", err.Error()))
}
