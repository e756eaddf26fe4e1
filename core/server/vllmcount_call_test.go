package server

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
)

// tokenizeBackend serves /tokenize with handle on loopback and returns a
// vLLM backend pointing at it.
func tokenizeBackend(t *testing.T, handle fasthttp.RequestHandler) *backend.Backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: handle}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	cfg := config.Default()
	cfg.Backends = []config.Backend{{Name: "v", Engine: "vllm", URL: "http://" + ln.Addr().String(), MaxConcurrent: 2}}
	reg, err := backend.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return reg.Backend("v")
}

func TestTokenizeOn(t *testing.T) {
	const body = `{"model":"m","messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true}`
	for _, tc := range []struct {
		name    string
		status  int
		answer  string
		count   int
		wide    bool // the failure is the backend's: back off
		wantErr bool
	}{
		{name: "vLLM's answer", status: 200, answer: `{"count":12,"max_model_len":4096,"tokens":[1,2]}`, count: 12},
		{name: "no such route", status: 404, answer: `{"detail":"Not Found"}`, wantErr: true, wide: true},
		{name: "refused messages", status: 400, answer: `{"object":"error","message":"bad","code":400}`, wantErr: true},
		{name: "not vLLM's shape", status: 200, answer: `{"tokens":[1]}`, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tokenizeBackend(t, func(ctx *fasthttp.RequestCtx) {
				if string(ctx.Path()) != "/tokenize" || !ctx.IsPost() || string(ctx.Request.Body()) != body ||
					string(ctx.Request.Header.ContentType()) != "application/json" || string(ctx.Request.Header.Peek("X-Request-ID")) != "r1" {
					ctx.Error("unexpected request", 418)
					return
				}
				ctx.SetStatusCode(tc.status)
				ctx.SetBodyString(tc.answer)
			})
			v, err := tokenizeOn(context.Background(), b, "r1", []byte(body))
			if tc.wantErr {
				if err == nil || backendWide(err) != tc.wide {
					t.Fatalf("err = %v (backend-wide %v), want an error, backend-wide %v", err, err != nil && backendWide(err), tc.wide)
				}
				return
			}
			if err != nil || v.count != tc.count || v.maxLen != 4096 {
				t.Fatalf("got %+v, %v", v, err)
			}
		})
	}
}

// A /tokenize that does not answer gives up with the request's context
// (and, at the latest, after vllmCountTimeout): a backend-wide failure.
func TestTokenizeOn_NoAnswer(t *testing.T) {
	release := make(chan struct{})
	b := tokenizeBackend(t, func(ctx *fasthttp.RequestCtx) { <-release })
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := tokenizeOn(ctx, b, "r1", []byte(`{}`))
	if err == nil || !backendWide(err) || errors.Is(err, errNoCount) {
		t.Fatalf("err = %v", err)
	}
}
