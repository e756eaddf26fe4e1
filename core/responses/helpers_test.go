package responses

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/server"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

var _ server.Keeper = (*Keeper)(nil)

// Owners: alice and bob are store users; admin is the bootstrap key's
// user 0.
var (
	alice = &auth.Principal{User: "alice", UserID: 11}
	bob   = &auth.Principal{User: "bob", UserID: 12}
	admin = &auth.Principal{User: "admin", UserID: 0}
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// env is a Keeper over a real SQLite store (a file: the store's
// connection pool is exercised as in production).
type env struct {
	t     testing.TB
	k     *Keeper
	st    *sqlstore.Store
	clock *clock
	path  string       // the SQLite file
	n     atomic.Int64 // request ids handed out
}

func newEnv(t testing.TB, opts ...func(*Options)) *env {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := sqlstore.Open(ctx, sqlstore.SQLite, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	o := Options{Retention: 24 * time.Hour, MaxItemBytes: 256 << 10, BlobThreshold: 1024, Clock: c.now}
	for _, f := range opts {
		f(&o)
	}
	return &env{t: t, k: New(st, o, nil), st: st, clock: c, path: path}
}

// requestID returns a fresh exchange id and the response id the
// translator gives it.
func (e *env) requestID() (reqID, respID string) {
	hex := fmt.Sprintf("%032x", e.n.Add(1))
	return "chatcmpl-" + hex, "resp_" + hex
}

// begin runs Begin and fails the test on an error.
func (e *env) begin(p *auth.Principal, body string) (string, server.Turn, string) {
	e.t.Helper()
	reqID, respID := e.requestID()
	out, turn, err := e.k.Begin(context.Background(), p, reqID, []byte(body))
	if err != nil {
		e.t.Fatalf("Begin(%s): %v", body, err)
	}
	return string(out), turn, respID
}

// beginErr runs Begin and returns its client error.
func (e *env) beginErr(p *auth.Principal, body string) *apierr.Error {
	e.t.Helper()
	reqID, _ := e.requestID()
	out, turn, err := e.k.Begin(context.Background(), p, reqID, []byte(body))
	if err == nil {
		e.t.Fatalf("Begin(%s) = %s, %v; want an error", body, out, turn)
	}
	ae, ok := err.(*apierr.Error)
	if !ok {
		e.t.Fatalf("Begin(%s): %v is not an *apierr.Error", body, err)
	}
	return ae
}

// answer runs one whole non-streamed exchange: Begin, the body, End.
func (e *env) answer(p *auth.Principal, body, text string) (sent, respID string) {
	e.t.Helper()
	sent, turn, respID := e.begin(p, body)
	if turn == nil {
		e.t.Fatalf("Begin(%s) gave no Turn", body)
	}
	turn.Write([]byte(responseObject(respID, "completed", text)))
	turn.End(200)
	return sent, respID
}

// responseObject is a response as the translator writes it, with one
// output message.
func responseObject(id, status, text string) string {
	msgID := "msg_" + strings.TrimPrefix(id, "resp_") + "_0"
	return `{"id":"` + id + `","object":"response","created_at":1764583200,"status":"` + status + `","model":"m",` +
		`"output":[{"type":"message","id":"` + msgID + `","status":"completed","role":"assistant",` +
		`"content":[{"type":"output_text","text":` + quote(text) + `,"annotations":[],"logprobs":[]}]}],` +
		`"usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7},"error":null}`
}

// stream is the SSE a streamed answer is, ending with terminal (an event
// name) carrying the response object.
func stream(id, terminal, text string) string {
	var b strings.Builder
	seq := 0
	ev := func(name, data string) {
		fmt.Fprintf(&b, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", name, name, seq, data)
		seq++
	}
	created := `{"id":"` + id + `","object":"response","status":"in_progress","model":"m","output":[]}`
	ev("response.created", `"response":`+created)
	ev("response.in_progress", `"response":`+created)
	for _, w := range strings.SplitAfter(text, " ") {
		ev("response.output_text.delta", `"item_id":"msg_x","output_index":0,"content_index":0,"delta":`+quote(w))
	}
	ev("response.output_text.done", `"item_id":"msg_x","output_index":0,"content_index":0,"text":`+quote(text))
	status := strings.TrimPrefix(terminal, "response.")
	ev(terminal, `"response":`+responseObject(id, status, text))
	return b.String()
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// serve runs one request against Serve with a real RequestCtx.
func (e *env) serve(p *auth.Principal, method, uri, body string) (int, string) {
	e.t.Helper()
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI(uri)
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, nil, nil)
	if !e.k.Serves(ctx.Method(), ctx.Path()) {
		e.t.Fatalf("Serves(%s %s) = false", method, uri)
	}
	e.k.Serve(&ctx, p, []byte(body))
	if ct := string(ctx.Response.Header.ContentType()); ct != "application/json" {
		e.t.Errorf("%s %s: Content-Type %q", method, uri, ct)
	}
	return ctx.Response.StatusCode(), string(ctx.Response.Body())
}

// ok runs a request that must answer 200 and decodes its body into v
// (when not nil).
func (e *env) ok(p *auth.Principal, method, uri, body string, v any) string {
	e.t.Helper()
	status, out := e.serve(p, method, uri, body)
	if status != 200 {
		e.t.Fatalf("%s %s: %d %s", method, uri, status, out)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(out), v); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, uri, out, err)
		}
	}
	return out
}

// apiError is OpenAI's error body.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// fails runs a request that must answer status in OpenAI's error shape
// and returns the error.
func (e *env) fails(p *auth.Principal, method, uri, body string, status int) apiError {
	e.t.Helper()
	got, out := e.serve(p, method, uri, body)
	var ae apiError
	if err := json.Unmarshal([]byte(out), &ae); err != nil || ae.Error.Message == "" || ae.Error.Type == "" {
		e.t.Fatalf("%s %s: %d %s is not an OpenAI error (%v)", method, uri, got, out, err)
	}
	if got != status {
		e.t.Fatalf("%s %s: %d %s, want %d", method, uri, got, out, status)
	}
	return ae
}

// inputOf decodes a spliced body's input items.
func inputOf(t *testing.T, body string) []map[string]any {
	t.Helper()
	var b struct {
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatalf("spliced body %s: %v", body, err)
	}
	return b.Input
}

// texts is each item's text (its first content part's), in order.
func texts(items []map[string]any) []string {
	var out []string
	for _, it := range items {
		parts, _ := it["content"].([]any)
		if len(parts) == 0 {
			out = append(out, "")
			continue
		}
		p, _ := parts[0].(map[string]any)
		s, _ := p["text"].(string)
		out = append(out, s)
	}
	return out
}

func storedResponse(t *testing.T, e *env, owner int64, id string) store.StoredResponse {
	t.Helper()
	r, err := e.st.Response(context.Background(), owner, id, time.Time{})
	if err != nil {
		t.Fatalf("stored response %s: %v", id, err)
	}
	return r
}
