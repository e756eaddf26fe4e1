package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/outcome"
)

// smallBufferErr returns the error fasthttp gives when raw does not fit
// its read buffer of size bytes.
func smallBufferErr(t testing.TB, raw string, size int) error {
	t.Helper()
	var h fasthttp.RequestHeader
	err := h.Read(bufio.NewReaderSize(strings.NewReader(raw), size))
	var small *fasthttp.ErrSmallBuffer
	if !errors.As(err, &small) {
		t.Fatalf("fasthttp returned %v, not ErrSmallBuffer", err)
	}
	return err
}

func headerLines(n int) string {
	return strings.Repeat("X-Padding: 0123456789abcdef0123456789abcdef\r\n", n)
}

func TestRequestLineTooLong(t *testing.T) {
	longLine := "POST /v1/chat/completions?q=" + strings.Repeat("a", 5000) + " HTTP/1.1\r\nHost: x\r\n\r\n"
	manyHeaders := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer mr2_secret\r\n" + headerLines(200) + "\r\n"

	// The shape with `contents: "..."` (fasthttp's snippet of the buffer).
	if msg := smallBufferErr(t, longLine, 4096).Error(); !strings.Contains(msg, `contents: "`) || !requestLineTooLong(msg) {
		t.Fatalf("a long request line is not seen: %q", msg)
	}
	if msg := smallBufferErr(t, manyHeaders, 4096).Error(); !strings.Contains(msg, `contents: "`) || requestLineTooLong(msg) {
		t.Fatalf("large headers taken for a long request line: %q", msg)
	}
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		// The other ErrSmallBuffer shapes carry no snippet: headers.
		{"error when reading request headers: small read buffer. Increase ReadBufferSize (n=1, reader buffered=4096)", false},
		{"error when reading request headers: small read buffer. Increase ReadBufferSize: buffer size=4096", false},
		// An older shape quoting the buffer.
		{`error when reading request headers: small read buffer. Increase ReadBufferSize. buffer: "GET /aaaaaaaa"`, true},
		{`error when reading request headers: small read buffer. Increase ReadBufferSize. buffer: "GET /a HTTP/1.1\r\nHost: x\r\n"`, false},
		{`buffer size=4096, contents: "GET /` + strings.Repeat("a", 195) + `"..."aaaa"`, true},
		{`buffer size=4096, contents: "GET /a HTTP/1.1\r\nX: ` + strings.Repeat("b", 190) + `"..."bbbb"`, false},
		{"", false},
	} {
		if got := requestLineTooLong(tc.msg); got != tc.want {
			t.Errorf("requestLineTooLong(%.80q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
}

// handleTransportError classifies fasthttp's read errors, answers with
// Connection: close, renders in the route's dialect when the path is
// known, and never logs the error's text (it quotes raw request bytes).
func TestHandleTransportError(t *testing.T) {
	s := newTestServer(t, nil, translator(t, "openai", fakeTranslator{}, chatPOST))
	var outs []outcome.Outcome
	s.observers = []outcome.Observer{outcome.ObserverFunc(func(o *outcome.Outcome) { outs = append(outs, *o) })}
	secret := "mr2_secret_key_do_not_log"
	longLine := "POST /v1/chat/completions?" + strings.Repeat("a", 9000) + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + secret + "\r\n\r\n"
	bigHeaders := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + secret + "\r\n" + headerLines(300) + "\r\n"
	for _, tc := range []struct {
		name   string
		err    error
		path   string
		status int
		code   string
	}{
		{name: "request line", err: smallBufferErr(t, longLine, 8192), status: 414, code: "uri_too_long"},
		{name: "headers", err: smallBufferErr(t, bigHeaders, 8192), path: "/v1/chat/completions", status: 431, code: "headers_too_large"},
		{name: "body", err: fasthttp.ErrBodyTooLarge, path: "/v1/chat/completions", status: 413, code: "request_too_large"},
		{name: "timeout", err: &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, status: 408, code: "request_timeout"},
		{name: "malformed", err: errors.New("cannot parse " + secret), path: "/v1/chat/completions", status: 400, code: "bad_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs = outs[:0]
			ctx := new(fasthttp.RequestCtx)
			if tc.path != "" { // a parsed header (an unparsed one leaves fasthttp's GET /, no Host)
				ctx.Request.Header.SetMethod("POST")
				ctx.Request.SetRequestURI(tc.path)
				ctx.Request.Header.SetHost("x")
			}
			s.handleTransportError(ctx, tc.err)
			resp := ctx.Response.String()
			if ctx.Response.StatusCode() != tc.status || !ctx.Response.ConnectionClose() ||
				len(ctx.Response.Header.Peek("X-Request-ID")) == 0 || !strings.Contains(resp, tc.code) {
				t.Fatalf("response:\n%s", resp)
			}
			// A known path gets the translator's rendering.
			if ct := string(ctx.Response.Header.ContentType()); (tc.path != "") != (ct == "application/x-fake") {
				t.Fatalf("content type %q for path %q", ct, tc.path)
			}
			if len(outs) != 1 {
				t.Fatalf("observers told %d times", len(outs))
			}
			o := outs[0]
			if o.Status != tc.status || o.ErrorCode != tc.code || o.Error != "transport: "+tc.code {
				t.Fatalf("outcome %d %q %q", o.Status, o.ErrorCode, o.Error)
			}
			if strings.Contains(resp, secret) || strings.Contains(o.Error, secret) {
				t.Fatal("the raw request reached the response or the log")
			}
		})
	}
}

// End to end over a real connection: fasthttp's own buffer overflow
// reaches handleTransportError and the client gets 414 or 431.
func TestTransport_EndToEnd(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) { c.Limits.MaxHeaderBytes = 4096 },
		translator(t, "openai", fakeTranslator{}, chatPOST))
	addr := serve(t, s)
	for _, tc := range []struct {
		name string
		raw  string
		want string
	}{
		{"long request line", "GET /v1/chat/completions?" + strings.Repeat("a", 6000) + " HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 414 "},
		{"large headers", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + headerLines(150) + "\r\n", "HTTP/1.1 431 "},
		{"malformed", "BLAH\r\n\r\n", "HTTP/1.1 400 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := roundTrip(t, addr, tc.raw)
			if !strings.HasPrefix(got, tc.want) || !strings.Contains(got, "Connection: close") {
				t.Fatalf("response:\n%s", got)
			}
		})
	}
}

// serve runs s on a loopback listener until the test ends.
func serve(t testing.TB, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = s.Serve(ln); close(done) }()
	t.Cleanup(func() {
		_ = s.srv.Shutdown()
		<-done
	})
	return ln.Addr().String()
}

// roundTrip writes raw and returns everything the server answers before
// closing the connection (or 5 s).
func roundTrip(t testing.TB, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	return string(b)
}
