package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
)

// rawStreamBackend answers each request on its connection with serve,
// after reading the request head and body.
func rawStreamBackend(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var req fasthttp.Request
				if err := req.Read(bufio.NewReader(c)); err != nil {
					return
				}
				serve(c)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

// chunk frames p as one HTTP chunk.
func chunk(p string) string {
	const hex = "0123456789abcdef"
	n, h := len(p), ""
	for ; n > 0; n /= 16 {
		h = string(hex[n%16]) + h
	}
	return h + "\r\n" + p + "\r\n"
}

// streamCall holds a stream until its first event: a backend that
// answers 200 and then fails before any event costs an attempt (a
// retryable error, the client told nothing), and one whose first event
// comes leaves it framed for the relay.
func TestStreamCall_FirstEvent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		serve   func(c net.Conn)
		wantErr error // nil: success
	}{
		{"event", func(c net.Conn) {
			_, _ = io.WriteString(c, sseHead+chunk("data: {\"a\":1}\n\n"))
			time.Sleep(time.Second) // the rest of the stream is the relay's
		}, nil},
		{"event split across reads", func(c net.Conn) {
			_, _ = io.WriteString(c, sseHead+chunk("data: {\"a\""))
			time.Sleep(20 * time.Millisecond)
			_, _ = io.WriteString(c, chunk(":1}\n\n"))
			time.Sleep(time.Second)
		}, nil},
		{"headers then close", func(c net.Conn) { _, _ = io.WriteString(c, sseHead) }, io.ErrUnexpectedEOF},
		{"empty stream", func(c net.Conn) { _, _ = io.WriteString(c, sseHead+"0\r\n\r\n") }, errEmptyStream},
		{"headers then silence", func(c net.Conn) {
			_, _ = io.WriteString(c, sseHead)
			time.Sleep(5 * time.Second)
		}, errAttemptTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := rawStreamBackend(t, tc.serve)
			s := newTestServer(t, nil)
			cfg := config.Default()
			cfg.Backends = []config.Backend{{Name: "raw", Engine: "vllm", URL: url, MaxConcurrent: 1}}
			reg, err := backend.NewRegistry(cfg)
			if err != nil {
				t.Fatal(err)
			}
			b := reg.Backend("raw")
			ex := newEx(s, nil)
			defer func() { _ = ex.bresp.CloseBodyStream() }()
			ex.breq.SetRequestURI(b.URL("/v1/chat/completions"))
			ex.breq.Header.SetMethod("POST")
			ex.breq.SetBodyString(`{"stream":true}`)
			done := make(chan error, 1)
			go func() { done <- ex.streamCall(b, 500*time.Millisecond) }()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second): // a hang, not a speed bound
				t.Fatal("streamCall did not return")
			}
			if tc.wantErr == nil {
				if err != nil || !bytes.Contains(ex.list, []byte(`{"a":1}`)) {
					t.Fatalf("error %v, framed events %q", err, ex.list)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || !retryable(err) || !liveFailure(err) || len(ex.list) != 0 {
				t.Fatalf("error %v (retryable %v): want a retryable %v and no event", err, retryable(err), tc.wantErr)
			}
			if ex.ctx.Err() != nil {
				t.Fatal("the request's context ended")
			}
		})
	}
}
