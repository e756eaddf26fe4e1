package gateway

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
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
