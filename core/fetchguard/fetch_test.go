package fetchguard

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestFetchPNG(t *testing.T) {
	var mu sync.Mutex
	var got http.Header
	srv := startServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/start" {
			// A cookie and a redirect: the next request must carry neither
			// the cookie nor a Referer.
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cret"})
			http.Redirect(w, r, "/img.png", http.StatusFound)
			return
		}
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		servePNG(w, r)
	})
	f := newFetcher(t, Config{}, nil, srv.prefix())
	img, err := f.Fetch(t.Context(), srv.URL+"/start")
	if err != nil {
		t.Fatal(err)
	}
	if img.MediaType != "image/png" || !bytes.Equal(img.Data, pngBytes) {
		t.Fatalf("got %s, %d bytes", img.MediaType, len(img.Data))
	}
	if img.Base64() != base64.StdEncoding.EncodeToString(pngBytes) {
		t.Errorf("Base64 = %q", img.Base64())
	}
	if want := "data:image/png;base64," + img.Base64(); img.DataURL() != want {
		t.Errorf("DataURL = %q", img.DataURL())
	}
	mu.Lock()
	defer mu.Unlock()
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"Accept", "User-Agent"}) {
		t.Errorf("request headers %v, want only Accept and User-Agent", got)
	}
	if ua := got.Get("User-Agent"); ua != "MindRouter-image-fetch/1" {
		t.Errorf("User-Agent %q", ua)
	}
}

// TestFetchByName dials the address the resolver gave, and refuses a name
// whose answer holds a refused address.
func TestFetchByName(t *testing.T) {
	srv := startServer(t, "127.0.0.1", servePNG)
	port := srv.addr().Port()
	res := &resolver{table: map[string][]string{
		"img.example":      {"127.0.0.1"},
		"mixed.example":    {"127.0.0.1", "10.0.0.1"},
		"mixed-v6.example": {"::ffff:127.0.0.1", "fd00:ec2::254"},
		"private.example":  {"10.0.0.1", "127.0.0.1"},
		"empty.example":    {},
	}}
	f := newFetcher(t, Config{}, res, srv.prefix())
	url := func(host string) string { return "http://" + host + ":" + itoa(port) + "/i.png" }

	if _, err := f.Fetch(t.Context(), url("img.example")); err != nil {
		t.Fatalf("allowed name: %v", err)
	}
	// All addresses must be allowed, not just the one that would be dialed
	// first.
	for _, host := range []string{"mixed.example", "mixed-v6.example", "private.example"} {
		_, err := f.Fetch(t.Context(), url(host))
		e := wantReason(t, err, ReasonForbiddenAddress)
		if strings.Contains(e.Error(), "10.0.0.1") || strings.Contains(e.Error(), "fd00") {
			t.Errorf("%s: message names the resolved address: %q", host, e.Error())
		}
	}
	_, err := f.Fetch(t.Context(), url("missing.example"))
	wantReason(t, err, ReasonDNS)
	_, err = f.Fetch(t.Context(), url("empty.example"))
	wantReason(t, err, ReasonDNS)

	// Without the allow-list the same name is refused: it resolves to loopback.
	strict := newFetcher(t, Config{}, res)
	_, err = strict.Fetch(t.Context(), url("img.example"))
	e := wantReason(t, err, ReasonForbiddenAddress)
	if strings.Contains(e.Error(), "127.0.0.1") {
		t.Errorf("message names the resolved address: %q", e.Error())
	}
	if n := srv.hits.Load(); n != 1 {
		t.Errorf("server got %d requests, want 1 (only the allowed fetch)", n)
	}
}

func TestFetchTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(servePNG))
	t.Cleanup(srv.Close)
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	allow := netip.PrefixFrom(ap.Addr(), ap.Addr().BitLen())
	res := &resolver{table: map[string][]string{"example.com": {ap.Addr().String()}}}

	// The test certificate is not in the system roots.
	untrusting := newFetcher(t, Config{}, res, allow)
	_, err := untrusting.Fetch(t.Context(), srv.URL)
	e := wantReason(t, err, ReasonConnect)
	if !strings.Contains(e.Err.Error(), "certificate") {
		t.Errorf("cause %v, want a certificate error", e.Err)
	}

	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	f := newFetcher(t, Config{RootCAs: roots, AllowedSchemes: []string{"https"}}, res, allow)
	for _, u := range []string{srv.URL, "https://example.com:" + itoa(ap.Port()) + "/"} {
		if _, err := f.Fetch(t.Context(), u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	_, err = f.Fetch(t.Context(), "http://example.com:"+itoa(ap.Port())+"/")
	wantReason(t, err, ReasonScheme)
}

func TestFetchResponseChecks(t *testing.T) {
	html := []byte("<!doctype html><html><body>hi</body></html>")
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)
	jpeg := append([]byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), make([]byte, 32)...)
	webp := append([]byte("RIFF\x1a\x00\x00\x00WEBPVP8 "), make([]byte, 16)...)
	gif := append([]byte("GIF89a\x01\x00\x01\x00"), make([]byte, 16)...)
	for _, tc := range []struct {
		name   string
		status int
		ctype  string // "-" sends none
		body   []byte
		want   Reason // 0: success
		mt     string
	}{
		{"png", 200, "image/png", pngBytes, 0, "image/png"},
		{"jpeg", 200, "image/jpeg", jpeg, 0, "image/jpeg"},
		{"webp", 200, "image/webp", webp, 0, "image/webp"},
		{"gif", 200, "image/gif; charset=binary", gif, 0, "image/gif"},
		{"declared jpg is png", 200, "image/jpg", pngBytes, 0, "image/png"},
		{"not found", 404, "image/png", pngBytes, ReasonStatus, ""},
		{"partial", 206, "image/png", pngBytes, ReasonStatus, ""},
		{"server error", 500, "text/plain", []byte("oops"), ReasonStatus, ""},
		{"html type", 200, "text/html", pngBytes, ReasonNotImage, ""},
		{"octet-stream", 200, "application/octet-stream", pngBytes, ReasonNotImage, ""},
		{"no type", 200, "-", pngBytes, ReasonNotImage, ""},
		{"bad type", 200, "image/png; ===", pngBytes, ReasonNotImage, ""},
		{"svg", 200, "image/svg+xml", svg, ReasonNotImage, ""},
		{"sniff mismatch", 200, "image/png", html, ReasonNotImage, ""},
		{"empty body", 200, "image/png", nil, ReasonNotImage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
				if tc.ctype == "-" {
					w.Header()["Content-Type"] = nil // stop net/http sniffing one
				} else {
					w.Header().Set("Content-Type", tc.ctype)
				}
				w.WriteHeader(tc.status)
				w.Write(tc.body)
			})
			f := newFetcher(t, Config{}, nil, srv.prefix())
			img, err := f.Fetch(t.Context(), srv.URL+"/i")
			if tc.want != 0 {
				e := wantReason(t, err, tc.want)
				if tc.want == ReasonStatus && !strings.Contains(e.Msg, itoa(uint16(tc.status))) {
					t.Errorf("message %q does not name the status", e.Msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if img.MediaType != tc.mt || !bytes.Equal(img.Data, tc.body) {
				t.Errorf("got %s, %d bytes", img.MediaType, len(img.Data))
			}
		})
	}
}

func TestLoad(t *testing.T) {
	srv := startServer(t, "127.0.0.1", servePNG)
	f := newFetcher(t, Config{MaxBytes: 100}, nil, srv.prefix())
	for _, ref := range []string{srv.URL, "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)} {
		img, err := f.Load(t.Context(), ref)
		if err != nil || !bytes.Equal(img.Data, pngBytes) {
			t.Errorf("%.40s: %v", ref, err)
		}
	}
	// Load bounds data URLs by the fetcher's MaxBytes, not the default.
	big := "DATA:image/png;base64," + base64.StdEncoding.EncodeToString(append(pngBytes, make([]byte, 100)...))
	_, err := f.Load(t.Context(), big)
	wantReason(t, err, ReasonTooLarge)
}

func itoa[T ~uint16 | ~int](n T) string { return strconv.Itoa(int(n)) }
