package fakellm

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

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

// BenchmarkPacing measures one streamed chat of 16 tokens at a time over
// loopback at several TPS: 0 (no pacing), 1e6 (16 µs of tokens: pacing
// should cost next to nothing) and 1e4 (1.5 ms of tokens: the floor is
// the pacing itself). Pacing by one timer per token made TPS 1e6 cost
// about a millisecond a request; pacing by due time sleeps only when the
// stream is ahead by more than paceSlack.
func BenchmarkPacing(b *testing.B) {
	body := `{"model":"qwen3-8b","stream":true,"messages":[{"role":"user","content":"Explain what an inference gateway does."}]}`
	for _, tc := range []struct {
		name string
		tps  float64
	}{{"tps=0", 0}, {"tps=1e6", 1e6}, {"tps=1e4", 1e4}} {
		b.Run(tc.name, func(b *testing.B) {
			_, url := startServer(b, Config{TPS: tc.tps, Tokens: 16})
			c := &fasthttp.HostClient{Addr: strings.TrimPrefix(url, "http://"), MaxConns: 1}
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.SetRequestURI(url + "/v1/chat/completions")
			req.Header.SetMethod(fasthttp.MethodPost)
			req.SetBodyString(body)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := c.Do(req, resp); err != nil {
					b.Fatal(err)
				}
				if resp.StatusCode() != 200 || !strings.HasSuffix(string(resp.Body()), "data: [DONE]\n\n") {
					b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
				}
			}
		})
	}
}

// BenchmarkWaitTokens measures the pacing alone: waiting for 16 tokens in
// turn, as a stream does, at TPS 1e6 (all due within 16 µs) and 1e5
// (within 160 µs), with no network in the way.
func BenchmarkWaitTokens(b *testing.B) {
	for _, tc := range []struct {
		name string
		tps  float64
	}{{"tps=1e6", 1e6}, {"tps=1e5", 1e5}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := New(Config{TPS: tc.tps, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			c := &call{s: s}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				c.slotAt = time.Now()
				for i := range 16 {
					if !c.waitToken(i) {
						b.Fatal("cancelled")
					}
				}
			}
		})
	}
}
