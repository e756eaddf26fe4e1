package console_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// TestConsole_KeySignIn signs in with the admin key, creates a key on the
// keys page, calls the API with it through openai-go and finds the
// request on the requests page.
func TestConsole_KeySignIn(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, "")
	tab := newTab(t)
	signInWithKey(t, tab, e, adminKey)
	if s := text(t, tab, "#signed-key"); !strings.Contains(s, "admin") {
		t.Fatalf("home page does not show the key's scopes: %q", s)
	}
	run(t, tab,
		chromedp.Navigate(e.console("keys")),
		chromedp.SendKeys(chromedp.ID("key-name"), "laptop"),
		chromedp.Click(chromedp.ID("create")),
		chromedp.WaitVisible(chromedp.ID("newkey")),
	)
	key := text(t, tab, "#full-key")
	if !strings.HasPrefix(key, "mr2_") {
		t.Fatalf("new key %q", key)
	}
	screenshot(t, tab, "keys")
	c := openai.NewClient(option.WithBaseURL(e.base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: testModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
	if err != nil {
		t.Fatalf("chat with the console's key: %v", err)
	}
	if !waitText(t, tab, e.console("requests"), `tr[data-request="`+resp.ID+`"]`) {
		t.Fatalf("request %s not on the requests page:\n%s", resp.ID, text(t, tab, "#requests"))
	}
	run(t, tab, chromedp.Navigate(e.console("models")), chromedp.WaitVisible(chromedp.ID("models")))
	if s := text(t, tab, "#models"); !strings.Contains(s, testModel) {
		t.Fatalf("models page lacks %s: %q", testModel, s)
	}
	screenshot(t, tab, "models")

	// Revoke the key on the keys page (the confirmation accepted): the API
	// refuses it at once.
	run(t, tab, chromedp.Navigate(e.console("keys")))
	get(t, tab, chromedp.Evaluate[bool](`(window.confirm = () => true, true)`))
	run(t, tab, chromedp.Click(chromedp.CSS(`tr[data-key="`+key[:12]+`"] button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(".flash")))
	if s := text(t, tab, `tr[data-key="`+key[:12]+`"]`); !strings.Contains(s, "revoked") {
		t.Fatalf("revoked key's row: %q", s)
	}
	_, err = c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: testModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a revoked key: %v, want 401", err)
	}
}

// waitText reloads url until sel exists (the audit writes in batches).
func waitText(t *testing.T, tab context.Context, u, sel string) bool {
	t.Helper()
	for range 50 {
		run(t, tab, chromedp.Navigate(u))
		if get(t, tab, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`)) > 0 {
			return true
		}
		run(t, tab, chromedp.Sleep(100*time.Millisecond))
	}
	return false
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// TestConsole_CSRF posts the key form with the session cookie but without
// its CSRF token: 403, and no key is made.
func TestConsole_CSRF(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, "")
	tab := newTab(t)
	signInWithKey(t, tab, e, adminKey)
	status := get(t, tab, chromedp.Evaluate[int](`fetch('/console/keys', {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'},
		body: 'name=forged&scopes=inference'}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if status != http.StatusForbidden {
		t.Fatalf("POST without the CSRF token: %d, want 403", status)
	}
	// And the login form without its token.
	resp, err := http.PostForm(e.console("login"), url.Values{"api_key": {adminKey}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("login without the CSRF token: %d, want 403: %s", resp.StatusCode, b)
	}
	run(t, tab, chromedp.Navigate(e.console("keys")), chromedp.WaitVisible(chromedp.ID("keys")))
	if s := text(t, tab, "#keys"); strings.Contains(s, "forged") {
		t.Fatalf("the forged form made a key: %q", s)
	}
}
