// Package tokencount is the gateway's side of exact token counts: near a
// model's context limit (core/server's context capping) a request is
// counted by its backend's own tokenizer and chat template, when the
// backend's adapter can say how (the count ops of ABI 2.7; vLLM's adapter
// builds a /tokenize request and reads its answer). The protocol is the
// adapter's; this package keeps what the host owns:
//
//   - the HTTP call to the backend, bounded by Timeout and the request's
//     context;
//   - a memo of answers per (backend, model, SHA-256 of the count request
//     body), so a client that resends the same request near the limit
//     (retries, the same long prompt from several users) costs one call;
//     bounded, with CLOCK eviction;
//   - the back-off: a backend whose count route is absent (404, 405, 501),
//     unreachable or slow is not asked again for Backoff, so a near-limit
//     request does not pay a failing round trip each.
//
// Counter.Exact is the one entry point; the Adapter interface is what it
// needs from the request's adapter (core/server implements it over
// core/plugcall). Any failure is an error, and the caller counts offline
// (core/tokens: the generic tokenizer), never failing the request.
package tokencount

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/plugcall"
)

const (
	// Timeout bounds one count call: tokenizing is milliseconds on the
	// engine's API server, so anything slower is a backend in trouble and
	// the offline count will do.
	Timeout = 2 * time.Second
	// Backoff: a backend whose count route is absent, or that is
	// unreachable or slow, is not asked again for this long.
	Backoff = 30 * time.Second
	// DefaultSize bounds a memo: ~100 bytes an entry.
	DefaultSize = 4096
)

// Count is a backend's count of a request's input.
type Count struct {
	Tokens int // input tokens, the chat template applied
	MaxLen int // the engine's context window for the model; 0: not said
}

// Adapter is the request's backend adapter, as Exact needs it: it knows
// its engine's count protocol (plugcall's EncodeCount and DecodeCount,
// with the request at hand bound in).
type Adapter interface {
	// CountRequest builds the backend request that counts the input.
	CountRequest() (plugcall.BackendRequest, error)
	// CountResponse reads the body of the backend's 200 answer.
	CountResponse(body []byte) (Count, error)
}

// Errors of Exact besides the adapter's and the transport's.
var (
	// ErrBackedOff: the backend failed a count recently and was not asked.
	ErrBackedOff = errors.New("tokencount: backend backed off")
	// ErrNoCount wraps an answer the adapter could not read a count from.
	ErrNoCount = errors.New("no token count in the answer")
)

// StatusError is a count answer other than 200.
type StatusError int

func (c StatusError) Error() string { return "HTTP " + strconv.Itoa(int(c)) }

// Counter holds the memo and the back-off of exact counts; one serves a
// gateway. Safe for concurrent use.
type Counter struct{ memo *memo }

// New returns a Counter whose memo holds up to size answers.
func New(size int) *Counter { return &Counter{memo: newMemo(size)} }

// Exact returns backend b's count of the request a builds the count
// request for, memoised per (b, model, body). An error says why there is
// none (ErrBackedOff: not asked); the caller then counts offline. A
// memo hit allocates nothing.
func (c *Counter) Exact(ctx context.Context, b *backend.Backend, model, reqID string, a Adapter) (Count, error) {
	br, err := a.CountRequest()
	if err != nil {
		return Count{}, fmt.Errorf("build the count request: %w", err)
	}
	key := countKey{backend: b.Name, model: model, sum: sha256.Sum256(br.Body)}
	if v, ok := c.memo.get(key); ok {
		return v, nil
	}
	now := time.Now()
	if !c.memo.usable(b.Name, now) {
		return Count{}, ErrBackedOff
	}
	v, err := ask(ctx, b, reqID, &br, a)
	if err != nil {
		if backendWide(err) && ctx.Err() == nil {
			c.memo.backOff(b.Name, now.Add(Backoff))
		}
		return Count{}, fmt.Errorf("%s %s: %w", br.Method, br.Path, err)
	}
	c.memo.put(key, v)
	return v, nil
}

// Len is the number of memoised answers.
func (c *Counter) Len() int { return c.memo.len() }

// ask sends br to b within Timeout and has a read a 200 answer.
func ask(ctx context.Context, b *backend.Backend, reqID string, br *plugcall.BackendRequest, a Adapter) (Count, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURIBytes(b.AppendURL(nil, br.Path))
	req.Header.SetMethod(br.Method)
	req.Header.SetContentType(br.ContentType)
	req.Header.Set("X-Request-ID", reqID)
	req.SetBody(br.Body)
	if err := b.DoContext(ctx, req, resp, Timeout); err != nil {
		return Count{}, err
	}
	if code := resp.StatusCode(); code != fasthttp.StatusOK {
		return Count{}, StatusError(code)
	}
	v, err := a.CountResponse(resp.Body())
	if err != nil {
		return Count{}, fmt.Errorf("%w: %w", ErrNoCount, err)
	}
	return v, nil
}

// backendWide says whether a count failure is the backend's, not this
// request's: no such route, or no answer in time. A 400 about one
// request's messages, a 500 or an answer without a count leaves the next
// request free to ask.
func backendWide(err error) bool {
	var st StatusError
	if errors.As(err, &st) {
		return st == fasthttp.StatusNotFound || st == fasthttp.StatusMethodNotAllowed || st == fasthttp.StatusNotImplemented
	}
	return !errors.Is(err, ErrNoCount) // else a transport error or timeout
}
