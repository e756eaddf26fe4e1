package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/config"
)

// timeouts.stream_idle bounds the gap between two reads of a backend
// stream, not the stream's length: a stream that keeps sending outlives
// it, and one that goes silent for longer fails with a timeout.
func TestDoStreamContext_IdleTimeoutIsPerRead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		gap := 50 * time.Millisecond
		if r.URL.Path == "/silent" {
			gap = 2 * time.Second
		}
		for i := range 12 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			fl.Flush()
			select {
			case <-time.After(gap):
			case <-r.Context().Done():
				return
			}
		}
	}))
	defer srv.Close()
	cfg := config.Default()
	cfg.Timeouts.StreamIdle = config.Duration(300 * time.Millisecond)
	cfg.Backends = []config.Backend{{Name: "s", Engine: "vllm", URL: srv.URL, MaxConcurrent: 2}}
	r, err := NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := r.Backend("s")
	read := func(path string) (int64, error) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(b.URL(path))
		if err := b.DoStreamContext(context.Background(), req, resp); err != nil {
			return 0, err
		}
		defer resp.CloseBodyStream()
		return io.Copy(io.Discard, resp.BodyStream())
	}
	// 12 events 50 ms apart: 600 ms in all, twice the idle timeout.
	if n, err := read("/steady"); err != nil || n == 0 {
		t.Fatalf("a steady stream longer than the idle timeout: %d bytes, %v", n, err)
	}
	if _, err := read("/silent"); err == nil || !isTimeoutErr(err) {
		t.Fatalf("a silent stream: %v, want a timeout", err)
	}
}

func isTimeoutErr(err error) bool {
	var te interface{ Timeout() bool }
	return errorsAs(err, &te) && te.Timeout()
}

var errorsAs = errors.As

// A backend that sends each event as its own chunk (net/http flushing per
// event, as Ollama; uvicorn does the same for vLLM) and has sent several
// by the time the gateway reads again: one Read of the stream body returns
// them all (the fill that finds the first takes what the socket holds),
// and the connection goes back to the pool once the body is read.
func TestDoStreamContext_OneReadTakesTheBufferedChunks(t *testing.T) {
	read0, sent := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		first := r.URL.Path == "/first"
		for i := range 5 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			fl.Flush() // one chunk each
			if i == 0 && first {
				<-read0
			}
		}
		if first {
			close(sent)
		}
		time.Sleep(50 * time.Millisecond)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	cfg := config.Default()
	cfg.Backends = []config.Backend{{Name: "s", Engine: "vllm", URL: srv.URL, MaxConcurrent: 2}}
	r, err := NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := r.Backend("s")
	for _, path := range []string{"/first", "/again"} {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI(b.URL(path))
		if err := b.DoStreamContext(context.Background(), req, resp); err != nil {
			t.Fatal(err)
		}
		var got []byte
		if path == "/first" {
			p := make([]byte, 8<<10)
			n, err := resp.BodyStream().Read(p)
			if err != nil || string(p[:n]) != "data: 0\n\n" {
				t.Fatalf("first read: %q, %v", p[:n], err)
			}
			close(read0)
			<-sent
			time.Sleep(20 * time.Millisecond) // the four chunks are in the socket
			n, err = resp.BodyStream().Read(p)
			if err != nil || string(p[:n]) != "data: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n" {
				t.Fatalf("second read: %q, %v; want the four events sent", p[:n], err)
			}
			got = append(got, "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n"...)
		}
		rest, err := io.ReadAll(resp.BodyStream())
		got = append(got, rest...)
		if err != nil || string(got) != "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\ndata: [DONE]\n\n" {
			t.Fatalf("%s: %q, %v", path, got, err)
		}
		_ = resp.CloseBodyStream()
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
}
