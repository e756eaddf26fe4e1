package server

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/outcome"
)

func TestClientAddr(t *testing.T) {
	proxies := parseProxies([]string{"10.0.0.0/8", "192.168.1.1/32"})
	for _, tc := range []struct {
		peer, xff, want string
		proxies         bool
	}{
		{"203.0.113.9", "", "203.0.113.9", true},
		{"203.0.113.9", "1.2.3.4", "203.0.113.9", true},    // an untrusted peer's header is ignored
		{"10.1.2.3", "198.51.100.7", "198.51.100.7", true}, // through one proxy
		{"10.1.2.3", "6.6.6.6, 198.51.100.7, 192.168.1.1", "198.51.100.7", true},
		{"10.1.2.3", "", "10.1.2.3", true},
		{"10.1.2.3", "10.9.9.9", "10.9.9.9", true}, // only proxies: the left-most hop
		{"10.1.2.3", "junk, 198.51.100.7", "198.51.100.7", true},
		{"10.1.2.3", "198.51.100.7, junk", "10.1.2.3", true}, // a malformed hop next to the proxy
		{"10.1.2.3", "198.51.100.7", "10.1.2.3", false},      // no trusted proxies configured
		{"::ffff:10.1.2.3", "2001:db8::1", "2001:db8::1", true},
	} {
		var ctx fasthttp.RequestCtx
		ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.ParseIP(tc.peer), Port: 1}, nil)
		if tc.xff != "" {
			ctx.Request.Header.Set("X-Forwarded-For", tc.xff)
		}
		p := proxies
		if !tc.proxies {
			p = nil
		}
		if got := clientAddr(&ctx, p).String(); got != tc.want {
			t.Errorf("peer %s xff %q: %s, want %s", tc.peer, tc.xff, got, tc.want)
		}
	}
}

// TestClientAddr_EveryLine: X-Forwarded-For given on several lines (a
// proxy that appends a line of its own) is one list in the order received:
// a forged first line does not win.
func TestClientAddr_EveryLine(t *testing.T) {
	proxies := parseProxies([]string{"10.0.0.0/8"})
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"proxy appends a line", []string{"6.6.6.6", "198.51.100.7"}, "198.51.100.7"},
		{"proxy line, then a trusted hop", []string{"6.6.6.6", "198.51.100.7", "10.0.0.2"}, "198.51.100.7"},
		{"trusted hops across lines", []string{"6.6.6.6, 198.51.100.7", "10.0.0.3, 10.0.0.2"}, "198.51.100.7"},
		{"only proxies across lines", []string{"10.0.0.9", "10.0.0.2"}, "10.0.0.9"},
		{"malformed last line", []string{"198.51.100.7", "junk"}, "10.1.2.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := "GET /v1/models HTTP/1.1\r\nHost: gw\r\n"
			for _, l := range tc.lines {
				raw += "X-Forwarded-For: " + l + "\r\n"
			}
			var req fasthttp.Request
			if err := req.Read(bufio.NewReader(strings.NewReader(raw + "\r\n"))); err != nil {
				t.Fatal(err)
			}
			var ctx fasthttp.RequestCtx
			ctx.Init(&req, &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 1}, nil)
			if got := clientAddr(&ctx, proxies).String(); got != tc.want {
				t.Errorf("lines %q: %s, want %s", tc.lines, got, tc.want)
			}
		})
	}
}

func TestKeepResponse(t *testing.T) {
	s := newTestServer(t, nil)
	s.keep = 10
	ex := newEx(s, nil)
	ex.keepResponse([]byte("hello "))
	if ex.out.ResponseCut {
		t.Fatal("cut too early")
	}
	ex.keepResponse([]byte("world!"))
	ex.keepResponse([]byte("more"))
	if string(ex.resp) != "hello worl" || !ex.out.ResponseCut {
		t.Errorf("kept %q cut %v", ex.resp, ex.out.ResponseCut)
	}
}

func TestEnergy(t *testing.T) {
	cfg := config.Default()
	cfg.Backends = []config.Backend{{Name: "a", Engine: "vllm", URL: "http://127.0.0.1:1", MaxConcurrent: 4}}
	reg, err := backend.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := reg.Backend("a")
	var o outcome.Outcome
	o.Stages[outcome.StageBackend] = 2 * time.Second
	if e := energy(b, &o); e != 0 {
		t.Errorf("no sidecar reading: %v J", e)
	}
	b.SetGPU(&backend.GPUStats{GPUs: 2, HasPower: true, PowerW: 600})
	if e := energy(b, &o); e != 1200 {
		t.Errorf("alone, 600 W for 2 s: %v J", e)
	}
	if !b.TryAcquire() { // another request in flight: half
		t.Fatal("no slot")
	}
	o.Stream, o.Stages[outcome.StageRespond] = true, 2*time.Second
	if e := energy(b, &o); e != 1200 {
		t.Errorf("stream of 4 s beside another request: %v J, want 1200", e)
	}
}
