package gateway

import (
	"bytes"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// rawHalfClosed sends one raw HTTP/1.1 request to the gateway, closes its
// sending side (a half-close: it still reads) and returns what the
// gateway wrote back before closing the connection.
func rawHalfClosed(t *testing.T, addr, path, body string) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := "POST " + path + " HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + adminKey +
		"\r\nContent-Type: application/json\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, _ := io.ReadAll(c)
	return got
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// A client that half-closes its connection after a non-streamed request
// makes the close watcher cancel the backend call. Bug: nothing answered
// the cancelled request, so fasthttp sent its default "200 OK" with an
// empty body, which the client (still reading) took for a successful,
// empty answer. An answer that was not produced is never a 200.
func TestHalfClosedUnaryRequest_NoEmpty200(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{TTFT: 2 * time.Second}, fakellm.Config{}, "")
	body := `{"model":"` + vllmModel + `","messages":[{"role":"user","content":"hi"}]}`
	got := rawHalfClosed(t, e.gw.Addr.String(), "/v1/chat/completions", body)
	if bytes.HasPrefix(got, []byte("HTTP/1.1 200")) {
		t.Fatalf("a cancelled request was answered 200:\n%q", got)
	}
	if len(got) > 0 && !strings.HasPrefix(string(got), "HTTP/1.1 ") {
		t.Fatalf("not an HTTP response: %q", got)
	}
}

// sendUnread sends one raw request and never reads the answer: its
// receive buffer is small, so the gateway's writes soon block.
func sendUnread(t *testing.T, addr, key, path, body string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.(*net.TCPConn).SetReadBuffer(4096)
	req := "POST " + path + " HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + key +
		"\r\nContent-Type: application/json\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return c
}

// Bug: a client that never reads its stream held its backend slot for
// good: the relay's write blocked with no deadline (stream_idle bounds
// only the backend's side). With timeouts.client_write the write fails,
// the relay ends and the slot is free again.
func TestClientWrite_UnreadStreamFreesBackendSlot(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{Tokens: 200000, MaxModelLen: 400000}, fakellm.Config{}, "timeouts: {client_write: 1s}\n")
	body := `{"model":"` + vllmModel + `","stream":true,"messages":[{"role":"user","content":"a very long story"}]}`
	sendUnread(t, e.gw.Addr.String(), adminKey, "/v1/chat/completions", body)
	testutil.WaitFor(t, "the stream to start", 10*time.Second, func() bool { return e.vllm.Stats().ActiveStreams > 0 })
	testutil.WaitFor(t, "the unread stream to free its backend slot", 20*time.Second, func() bool {
		var busy int64
		for _, b := range e.gw.Reg.Backends() {
			busy += b.InFlight()
		}
		return busy == 0 && e.vllm.Stats().ActiveStreams == 0
	})
}

// Bug: a unary answer's quota ticket was released when the handler
// returned, before fasthttp wrote the body, so a user's requests in
// flight did not count answers still being written to clients that do
// not read (each pinning its answer in memory): one user held dozens. The
// ticket is held until the answer is written, or the write fails after
// timeouts.client_write.
func TestClientWrite_UnreadAnswerHoldsConcurrencyTicket(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{EmbeddingDim: 2048}, fakellm.Config{}, "timeouts: {client_write: 2s}\n")
	_, k := newUser(t, e.base, "slowreader", "staff", map[string]any{"max_concurrent_override": 1, "rpm_limit_override": 10000}, nil)
	inputs := make([]string, 200)
	for i := range inputs {
		inputs[i] = `"text ` + itoa(i) + `"`
	}
	body := `{"model":"` + vllmModel + `","input":[` + strings.Join(inputs, ",") + `]}`
	a := sendUnread(t, e.gw.Addr.String(), k.FullKey, "/v1/embeddings", body)
	testutil.WaitFor(t, "the backend to answer the first request", 20*time.Second, func() bool {
		return e.vllm.Stats().Completed >= 1
	})
	// The user's second request is refused while the first answer is
	// being written, and admitted once that write gave up (the gateway
	// then counts the first answer's client as gone): never while the
	// gateway still writes it.
	small := `{"model":"` + vllmModel + `","input":"hi"}`
	var refused bool
	testutil.WaitFor(t, "a second request of the user to be admitted", 30*time.Second, func() bool {
		st, _, _ := rawPost(t, e.base+"/v1/embeddings", k.FullKey, small)
		refused = refused || st == 429
		return st == 200
	})
	gone, _ := metricValue(scrape(t, e.base+"/metrics", ""), "mindrouter_client_disconnects_total")
	if gone < 1 {
		t.Fatal("the second request was admitted while the first answer was still being written to a client that does not read")
	}
	if !refused {
		t.Fatal("the second request was never refused while the first answer was unread")
	}
	_ = a.Close()
}

// Bug: a request naming several image URLs made the gateway fetch every
// one in full (8 × 10 MiB allowed, 80 MiB) before the plugin's payload
// limit (32 MiB) refused the request: a 700-byte request cost 80 MiB.
// A request's images now share images.max_request_bytes (16 MiB, within
// the payload limit as base64): an image whose announced size does not
// fit is refused before its body is fetched, and the request is a 413.
func TestImageURL_RequestBudgetStopsFetching(t *testing.T) {
	t.Parallel()
	const n, size = 8, 4 << 20
	gate := make(chan struct{})
	var abandoned, served atomic.Int64
	png, _ := base64.StdEncoding.DecodeString(onePixelPNG)
	body := make([]byte, size)
	copy(body, png)
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Content-Length", itoa(size))
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select { // the body waits until the test has seen which images the gateway gave up
		case <-gate:
		case <-r.Context().Done():
			abandoned.Add(1)
			return
		}
		if _, err := w.Write(body); err == nil {
			served.Add(1)
		}
	}))
	t.Cleanup(img.Close)
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "images: {allow: [127.0.0.1/32]}\n")
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"type":"image_url","image_url":{"url":"` + img.URL + "/" + itoa(i) + `.png"}}`
	}
	req := `{"model":"` + ollamaModel + `","messages":[{"role":"user","content":[{"type":"text","text":"what?"},` +
		strings.Join(parts, ",") + `]}]}`
	type answer struct {
		status int
		body   map[string]any
	}
	done := make(chan answer, 1)
	go func() {
		st, _, b := rawPost(t, e.base+"/v1/chat/completions", adminKey, req)
		done <- answer{st, b}
	}()
	const fits = (16 << 20) / size
	testutil.WaitFor(t, "the gateway to give up the images over its budget unfetched", 20*time.Second, func() bool {
		return abandoned.Load() == n-fits
	})
	open()
	a := <-done
	if a.status != 413 {
		t.Fatalf("status %d %v, want 413", a.status, a.body)
	}
	if errObj, _ := a.body["error"].(map[string]any); errObj["code"] != "images_too_large" {
		t.Fatalf("error %v", a.body)
	}
	got, ok := metricValue(scrape(t, e.base+"/metrics", ""), "mindrouter_image_fetch_bytes_total")
	if !ok || got > 16<<20 {
		t.Fatalf("fetched %v bytes (exported %v) for a 16 MiB request budget", got, ok)
	}
	testutil.WaitFor(t, "the held image bytes to be given back", 5*time.Second, func() bool {
		v, _ := metricValue(scrape(t, e.base+"/metrics", ""), "mindrouter_image_bytes_held")
		return v == 0
	})
	if served.Load() > fits {
		t.Fatalf("%d image bodies served, want at most %d", served.Load(), fits)
	}
}
