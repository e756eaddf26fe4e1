package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// ssoYAML is the console's OIDC config against the provider at issuer.
func ssoYAML(issuer string) string {
	return `console:
  oidc:
    issuer: ` + issuer + `
    client_id: ` + idpClientID + `
    client_secret: ` + idpClientSecret + `
    redirect_url: "{BASE}/console/login/callback"
    groups_claim: groups
    group_map: {cs-students: students}
    email_domains: {staff.campus.example: staff}
`
}

// ssoEnv is a gateway whose console signs in through a real provider.
func ssoEnv(t *testing.T, users ...idpUser) (*env, *idp) {
	t.Helper()
	// The provider must know the console's callback, and the gateway the
	// provider's issuer: the gateway's address is fixed first (startEnv
	// listens before it starts), so the provider starts on a placeholder
	// and both learn the other's address through the base.
	var p *idp
	e := startEnvWith(t, fakellm.Config{}, func(base string) string {
		p = startIDP(t, base, users...)
		return ssoYAML(p.issuer)
	})
	return e, p
}

// signInSSO runs the whole authorization code flow in tab: the console's
// button, the provider's login form, the callback, the home page.
func signInSSO(t *testing.T, tab context.Context, e *env, email string) {
	t.Helper()
	run(t, tab,
		chromedp.Navigate(e.console("login")),
		chromedp.Click(chromedp.ID("sso")),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), email),
		chromedp.SendKeys(chromedp.ID("password"), idpPassword),
		chromedp.Submit(chromedp.ID("password")),
		chromedp.WaitVisible(chromedp.ID("tokens")),
	)
}

// TestConsole_SSO signs a new student in through the provider: the user
// is created in the group the groups claim maps to, makes a key in the
// console, calls the API with it through openai-go, and finds the request
// on the requests page. Then an administrator disables them, and their
// session ends at the next page.
func TestConsole_SSO(t *testing.T) {
	e, _ := ssoEnv(t, idpUser{ID: "u1", Email: "ada@campus.example", Groups: []string{"chess-club", "cs-students"}})
	tab := newTab(t)
	run(t, tab, chromedp.Navigate(e.console("login")), chromedp.WaitVisible(chromedp.ID("sso")))
	screenshot(t, tab, "login")
	signInSSO(t, tab, e, "ada@campus.example")
	u, err := e.gw.Store.UserByName(context.Background(), "ada@campus.example")
	if err != nil {
		t.Fatalf("first sign-in made no user: %v", err)
	}
	g, err := e.gw.Store.Group(context.Background(), u.GroupID)
	if err != nil || g.Name != "students" {
		t.Fatalf("user's group = %q (%v), want students (the groups claim's cs-students)", g.Name, err)
	}
	run(t, tab,
		chromedp.Navigate(e.console("keys")),
		chromedp.SendKeys(chromedp.ID("key-name"), "notebook"),
		chromedp.Click(chromedp.ID("create")),
		chromedp.WaitVisible(chromedp.ID("newkey")),
	)
	key := text(t, tab, "#full-key")
	c := openai.NewClient(option.WithBaseURL(e.base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	var ids []string
	for _, prompt := range []string{"Hello", "What is a monad?", "Sort 3 1 2"} {
		resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: testModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}})
		if err != nil {
			t.Fatalf("chat with the console's key: %v", err)
		}
		ids = append(ids, resp.ID)
	}
	for _, id := range ids {
		if !waitText(t, tab, e.console("requests"), `tr[data-request="`+id+`"]`) {
			t.Fatalf("request %s not on the requests page:\n%s", id, text(t, tab, "#requests"))
		}
	}
	screenshot(t, tab, "requests")
	run(t, tab, chromedp.Navigate(e.console("")), chromedp.WaitVisible(chromedp.ID("chart")))
	if s := text(t, tab, "#chart figcaption"); !strings.Contains(s, testModel) {
		t.Fatalf("the usage chart's legend lacks %s: %q", testModel, s)
	}
	screenshot(t, tab, "home")

	// An administrator disables the user: the session ends at once.
	adminPatch(t, e, "/api/admin/users/"+itoa(u.ID), `{"is_active": false}`)
	run(t, tab, chromedp.Navigate(e.console("keys")), chromedp.WaitVisible(chromedp.ID("ended")))
	if loc := get(t, tab, chromedp.Location()); !strings.Contains(loc, "/console/login") {
		t.Fatalf("a disabled user's page went to %s, not the login page", loc)
	}
	// And signing in again is refused.
	signInRefused(t, tab, e, "ada@campus.example", "disabled")
}

// TestConsole_SSOEmailDomain maps a user without a mapped group claim by
// their e-mail domain, and refuses one no rule maps.
func TestConsole_SSOEmailDomain(t *testing.T) {
	e, _ := ssoEnv(t,
		idpUser{ID: "u2", Email: "grace@staff.campus.example"},
		idpUser{ID: "u3", Email: "eve@elsewhere.example", Groups: []string{"chess-club"}})
	tab := newTab(t)
	signInSSO(t, tab, e, "grace@staff.campus.example")
	u, err := e.gw.Store.UserByName(context.Background(), "grace@staff.campus.example")
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := e.gw.Store.Group(context.Background(), u.GroupID); g.Name != "staff" {
		t.Fatalf("group %q, want staff (email_domains)", g.Name)
	}
	tab2 := newTab(t)
	signInRefused(t, tab2, e, "eve@elsewhere.example", "cannot be created")
	if _, err := e.gw.Store.UserByName(context.Background(), "eve@elsewhere.example"); err == nil {
		t.Fatal("an unmapped identity got an account")
	}
}

// signInRefused runs the flow for email and expects the login page's
// error to contain want.
func signInRefused(t *testing.T, tab context.Context, e *env, email, want string) {
	t.Helper()
	run(t, tab,
		chromedp.Navigate(e.console("login")),
		chromedp.Click(chromedp.ID("sso")),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), email),
		chromedp.SendKeys(chromedp.ID("password"), idpPassword),
		chromedp.Submit(chromedp.ID("password")),
		chromedp.WaitVisible(chromedp.ID("error")),
	)
	if s := text(t, tab, "#error"); !strings.Contains(s, want) {
		t.Fatalf("sign-in of %s: %q, want it to say %q", email, s, want)
	}
}

// adminPatch sends a PATCH to the admin API with the admin key.
func adminPatch(t *testing.T, e *env, path, body string) {
	t.Helper()
	req, _ := http.NewRequest("PATCH", e.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var d map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&d)
		t.Fatalf("PATCH %s: %d %v", path, resp.StatusCode, d)
	}
}

// TestConsole_SSOStateBoundToBrowser: an attacker's own sign-in, stopped
// at the provider's redirect back, cannot sign a victim's browser in as
// the attacker (login CSRF): the state must come with the browser that
// started the flow.
func TestConsole_SSOStateBoundToBrowser(t *testing.T) {
	e, _ := ssoEnv(t, idpUser{ID: "m", Email: "mallory@campus.example", Groups: []string{"cs-students"}})
	jar, _ := cookiejar.New(nil)
	var callback string
	attacker := &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if strings.HasSuffix(r.URL.Path, "/console/login/callback") {
			callback = r.URL.String()
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := attacker.Get(e.console("login/oidc")) // ends at the provider's login form
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Request.URL.Query().Get("authRequestID")
	resp, err = attacker.PostForm(resp.Request.URL.Scheme+"://"+resp.Request.URL.Host+"/login/username",
		url.Values{"id": {id}, "username": {"mallory@campus.example"}, "password": {idpPassword}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if callback == "" {
		t.Fatalf("the provider did not redirect back (%d at %s)", resp.StatusCode, resp.Request.URL)
	}
	tab := newTab(t)
	run(t, tab, chromedp.Navigate(callback), chromedp.WaitVisible(chromedp.ID("error")))
	if s := text(t, tab, "#error"); !strings.Contains(s, "not started in this browser") {
		t.Fatalf("victim's browser: %q", s)
	}
	run(t, tab, chromedp.Navigate(e.console("")))
	if loc := get(t, tab, chromedp.Location()); !strings.Contains(loc, "/console/login") {
		t.Fatalf("the victim's browser is signed in (at %s)", loc)
	}
	// The attacker's own browser (with the state cookie) still completes.
	resp, err = attacker.Get(callback)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Request.URL.Path != "/console/" || !strings.Contains(string(b), `id="tokens"`) {
		t.Fatalf("the browser that started the flow ended at %s (%d), not the home page", resp.Request.URL, resp.StatusCode)
	}
}
