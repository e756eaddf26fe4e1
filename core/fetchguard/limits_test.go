package fetchguard

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// padded is a PNG header followed by zeros, n bytes in all.
func padded(n int) []byte {
	b := make([]byte, n)
	copy(b, pngBytes)
	return b
}

func TestSizeLimit(t *testing.T) {
	const max = 1000
	stall := make(chan struct{})
	t.Cleanup(func() { close(stall) })
	srv := startServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		switch r.URL.Path {
		case "/length-then-stall":
			// Headers only: a fetcher that waited for the body would time out.
			w.Header().Set("Content-Length", strconv.Itoa(n))
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			select {
			case <-stall:
			case <-r.Context().Done():
			}
		case "/chunked":
			for b := padded(n); len(b) > 0; {
				k := min(len(b), 300)
				w.Write(b[:k])
				w.(http.Flusher).Flush() // no Content-Length: chunked
				b = b[k:]
			}
		case "/length":
			w.Header().Set("Content-Length", strconv.Itoa(n))
			w.Write(padded(n))
		}
	})
	f := newFetcher(t, Config{MaxBytes: max, Timeout: 30 * time.Second}, nil, srv.prefix())

	start := time.Now()
	_, err := f.Fetch(t.Context(), srv.URL+"/length-then-stall?n=1001")
	wantReason(t, err, ReasonTooLarge)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("refusing on Content-Length took %v", d)
	}
	for _, tc := range []struct {
		path string
		n    int
		ok   bool
	}{
		{"/length", max, true},
		{"/length", max + 1, false},
		{"/chunked", max, true},
		{"/chunked", max + 1, false},
		{"/chunked", 50 * max, false},
	} {
		img, err := f.Fetch(t.Context(), srv.URL+tc.path+"?n="+strconv.Itoa(tc.n))
		if !tc.ok {
			wantReason(t, err, ReasonTooLarge)
			continue
		}
		if err != nil || len(img.Data) != tc.n {
			t.Errorf("%s n=%d: %d bytes, %v", tc.path, tc.n, len(img.Data), err)
		}
	}
}

func TestTimeout(t *testing.T) {
	srv := startServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			w.Header().Set("Content-Type", "image/png")
			w.Header().Set("Content-Length", "5000")
			w.Write(pngBytes)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done() // stall until the client gives up
	})
	f := newFetcher(t, Config{Timeout: 200 * time.Millisecond}, nil, srv.prefix())
	for _, path := range []string{"/headers", "/body"} {
		start := time.Now()
		_, err := f.Fetch(t.Context(), srv.URL+path)
		wantReason(t, err, ReasonTimeout)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: timed out after %v", path, d)
		}
	}

	// The caller's own cancellation is not a fetch failure.
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	slow := newFetcher(t, Config{Timeout: 10 * time.Second}, nil, srv.prefix())
	_, err := slow.Fetch(ctx, srv.URL+"/headers")
	var fe *Error
	if !errors.Is(err, context.Canceled) || errors.As(err, &fe) {
		t.Errorf("canceled fetch: %v (%T), want context.Canceled", err, err)
	}
}

func TestHeaderLimit(t *testing.T) {
	srv := startServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("a", maxHeaderBytes+1))
		servePNG(w, r)
	})
	f := newFetcher(t, Config{}, nil, srv.prefix())
	_, err := f.Fetch(t.Context(), srv.URL)
	e := wantReason(t, err, ReasonConnect)
	if !strings.Contains(e.Err.Error(), "headers exceeded") {
		t.Errorf("cause %v", e.Err)
	}
}
