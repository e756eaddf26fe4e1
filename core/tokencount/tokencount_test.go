package tokencount

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/plugcall"
)

// countBackend serves handle on loopback and returns a backend pointing
// at it, and the number of requests it got.
func countBackend(t *testing.T, handle fasthttp.RequestHandler) (*backend.Backend, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { n.Add(1); handle(ctx) }}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	cfg := config.Default()
	cfg.Backends = []config.Backend{{Name: "v", Engine: "vllm", URL: "http://" + ln.Addr().String(), MaxConcurrent: 2}}
	reg, err := backend.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return reg.Backend("v"), &n
}

// fakeAdapter builds a fixed count request and reads "count max" answers.
type fakeAdapter struct {
	body      string
	encodeErr error
}

func (a fakeAdapter) CountRequest() (plugcall.BackendRequest, error) {
	return plugcall.BackendRequest{Method: "POST", Path: "/tokenize", ContentType: "application/json", Body: []byte(a.body)}, a.encodeErr
}

func (fakeAdapter) CountResponse(body []byte) (Count, error) {
	var c, m int
	var err error
	s := string(body)
	for i := range s {
		if s[i] == ' ' {
			if c, err = strconv.Atoi(s[:i]); err == nil {
				m, err = strconv.Atoi(s[i+1:])
			}
			return Count{Tokens: c, MaxLen: m}, err
		}
	}
	return Count{}, errors.New("not a count")
}

func TestExact(t *testing.T) {
	const body = `{"model":"m","messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true}`
	for _, tc := range []struct {
		name    string
		status  int
		answer  string
		count   int
		wide    bool // the failure is the backend's: backed off
		wantErr error
	}{
		{name: "the engine's answer", status: 200, answer: `12 4096`, count: 12},
		{name: "no such route", status: 404, answer: `{"detail":"Not Found"}`, wide: true, wantErr: StatusError(404)},
		{name: "refused messages", status: 400, answer: `{"object":"error","message":"bad","code":400}`, wantErr: StatusError(400)},
		{name: "not the engine's shape", status: 200, answer: `{"tokens":[1]}`, wantErr: ErrNoCount},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, n := countBackend(t, func(ctx *fasthttp.RequestCtx) {
				if string(ctx.Path()) != "/tokenize" || !ctx.IsPost() || string(ctx.Request.Body()) != body ||
					string(ctx.Request.Header.ContentType()) != "application/json" || string(ctx.Request.Header.Peek("X-Request-ID")) != "r1" {
					ctx.Error("unexpected request", 418)
					return
				}
				ctx.SetStatusCode(tc.status)
				ctx.SetBodyString(tc.answer)
			})
			c := New(16)
			for i := range 2 {
				v, err := c.Exact(context.Background(), b, "m", "r1", fakeAdapter{body: body})
				switch {
				case tc.wantErr == nil:
					if err != nil || v != (Count{Tokens: tc.count, MaxLen: 4096}) {
						t.Fatalf("call %d: got %+v, %v", i, v, err)
					}
				case i == 1 && tc.wide:
					if !errors.Is(err, ErrBackedOff) {
						t.Fatalf("after a backend-wide failure: %v, want ErrBackedOff", err)
					}
				default:
					var st StatusError
					if !errors.Is(err, tc.wantErr) && !(errors.As(err, &st) && st == tc.wantErr) {
						t.Fatalf("call %d: err = %v, want %v", i, err, tc.wantErr)
					}
					if backendWide(err) != tc.wide {
						t.Fatalf("backend-wide %v, want %v", backendWide(err), tc.wide)
					}
				}
			}
			// Answered: memoised, asked once. Backend-wide: asked once, then
			// not asked. Otherwise: asked each time.
			want := int32(2)
			if tc.wantErr == nil || tc.wide {
				want = 1
			}
			if got := n.Load(); got != want {
				t.Errorf("the backend was asked %d times, want %d", got, want)
			}
			if tc.wantErr == nil && c.Len() != 1 {
				t.Errorf("memo holds %d", c.Len())
			}
		})
	}
}

// The adapter's failure to build the request: nothing is asked, nothing
// backed off.
func TestExact_EncodeFails(t *testing.T) {
	b, n := countBackend(t, func(ctx *fasthttp.RequestCtx) {})
	c := New(4)
	boom := errors.New("unsupported")
	if _, err := c.Exact(context.Background(), b, "m", "r1", fakeAdapter{encodeErr: boom}); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if n.Load() != 0 || !c.memo.usable("v", time.Now()) {
		t.Error("asked or backed off")
	}
}

// A count route that does not answer gives up with the request's context
// (and, at the latest, after Timeout): a backend-wide failure, but one not
// backed off for when the request itself ended.
func TestExact_NoAnswer(t *testing.T) {
	release := make(chan struct{})
	b, _ := countBackend(t, func(ctx *fasthttp.RequestCtx) { <-release })
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	c := New(4)
	_, err := c.Exact(ctx, b, "m", "r1", fakeAdapter{body: "{}"})
	if err == nil || !backendWide(err) || errors.Is(err, ErrNoCount) {
		t.Fatalf("err = %v", err)
	}
	if !c.memo.usable("v", time.Now()) {
		t.Error("backed off for a request that ended")
	}
	br, _ := fakeAdapter{body: "{}"}.CountRequest()
	if _, err := ask(ctx, b, "r1", &br, fakeAdapter{}); err == nil || !backendWide(err) {
		t.Fatalf("ask: %v", err)
	}
}

func TestBackendWide(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no route", StatusError(404), true},
		{"method not allowed", StatusError(405), true},
		{"not implemented", StatusError(501), true},
		{"this request's messages refused", StatusError(400), false},
		{"a server error", StatusError(500), false},
		{"no count", ErrNoCount, false},
		{"timeout", fasthttp.ErrTimeout, true},
		{"refused", errors.New("dial tcp: connection refused"), true},
	} {
		if got := backendWide(tc.err); got != tc.want {
			t.Errorf("%s: backendWide(%v) = %v", tc.name, tc.err, got)
		}
	}
}
