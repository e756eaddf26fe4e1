package fakellm

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

const benchChatBody = `{"model":"qwen3-8b","messages":[{"role":"system","content":"You are a helpful assistant."},` +
	`{"role":"user","content":"Explain in one paragraph what an inference gateway does."}],"max_tokens":64}`

// BenchmarkChatNonStream measures a full non-streaming chat completion over
// loopback HTTP, client included: the simulator's cost as a benchmark
// baseline.
func BenchmarkChatNonStream(b *testing.B) {
	_, url := startServer(b, Config{})
	c := &fasthttp.HostClient{Addr: strings.TrimPrefix(url, "http://"), MaxConns: 64}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(url + "/v1/chat/completions")
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType("application/json")
		req.SetBodyString(benchChatBody)
		for pb.Next() {
			if err := c.Do(req, resp); err != nil {
				b.Fatal(err)
			}
			if resp.StatusCode() != 200 {
				b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
			}
		}
	})
}

// BenchmarkChatNonStreamHandler measures the server's request handling alone
// (no network, no client): parsing, generation and rendering.
func BenchmarkChatNonStreamHandler(b *testing.B) {
	s, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	var ctx fasthttp.RequestCtx
	ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod(fasthttp.MethodPost)
		ctx.Request.SetRequestURI("/v1/chat/completions")
		ctx.Request.SetBodyString(benchChatBody)
		s.handle(&ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}

// BenchmarkChatStream measures a streamed chat completion over loopback.
func BenchmarkChatStream(b *testing.B) {
	_, url := startServer(b, Config{})
	c := &fasthttp.HostClient{Addr: strings.TrimPrefix(url, "http://"), MaxConns: 64}
	body := strings.Replace(benchChatBody, `{"model"`, `{"stream":true,"model"`, 1)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(url + "/v1/chat/completions")
		req.Header.SetMethod(fasthttp.MethodPost)
		req.SetBodyString(body)
		for pb.Next() {
			if err := c.Do(req, resp); err != nil {
				b.Fatal(err)
			}
			if resp.StatusCode() != 200 {
				b.Fatalf("status %d", resp.StatusCode())
			}
		}
	})
}
