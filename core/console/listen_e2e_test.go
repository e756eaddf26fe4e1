package console_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// get answers GET url with Accept (no redirects followed).
func httpGet(t *testing.T, url, accept string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// A browser's GET / goes to the console; Ollama's probe of / still gets
// Ollama's answer. Console pages carry the CSP and the cookie's flags.
func TestConsole_Mount(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, "")
	if st, h, _ := httpGet(t, e.base+"/", "text/html,application/xhtml+xml"); st != http.StatusFound || !strings.HasSuffix(h.Get("Location"), "/console/") {
		t.Fatalf("browser GET /: %d to %q, want 302 to /console/", st, h.Get("Location"))
	}
	if st, _, body := httpGet(t, e.base+"/", ""); st != http.StatusOK || !strings.Contains(body, "Ollama is running") {
		t.Fatalf("API client GET /: %d %q", st, body)
	}
	st, h, body := httpGet(t, e.console("login"), "")
	if st != http.StatusOK || !strings.Contains(body, `name="api_key"`) {
		t.Fatalf("GET /console/login: %d", st)
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("CSP %q", csp)
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, " style=") || strings.Contains(body, " onclick=") {
		t.Fatal("the login page has inline script or style")
	}
	if st, h, _ := httpGet(t, e.console(""), ""); st != http.StatusSeeOther || h.Get("Location") != "/console/login" {
		t.Fatalf("GET /console/ without a session: %d to %q", st, h.Get("Location"))
	}
	if st, _, _ := httpGet(t, e.console("static/console.js"), ""); st != http.StatusOK {
		t.Fatalf("static script: %d", st)
	}
}

// console.listen serves the console on its own listener and not on the
// API's; console.enabled false serves none.
func TestConsole_OwnListenerAndOff(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, "console: {listen: '127.0.0.1:0'}\n")
	if e.gw.ConsoleAddr == nil {
		t.Fatal("no console listener")
	}
	if st, _, body := httpGet(t, "http://"+e.gw.ConsoleAddr.String()+"/console/login", ""); st != http.StatusOK || !strings.Contains(body, "api_key") {
		t.Fatalf("console listener: %d", st)
	}
	if st, _, _ := httpGet(t, e.console("login"), ""); st != http.StatusNotFound {
		t.Fatalf("API listener still serves the console: %d", st)
	}
	off := startEnv(t, fakellm.Config{}, "console: {enabled: false}\n")
	if st, _, _ := httpGet(t, off.console("login"), ""); st != http.StatusNotFound {
		t.Fatalf("console.enabled false: %d", st)
	}
	if st, _, _ := httpGet(t, off.base+"/", "text/html"); st == http.StatusFound {
		t.Fatal("console.enabled false still redirects /")
	}
}
