package console_test

// The end-to-end harness: one headless Chromium for the test binary
// (pages open in tabs), gateways in front of a fakellm backend, sign-in
// helpers and screenshots. Admin page tests (admin_*_test.go) reuse it.

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/gateway"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// adminKey is the bootstrap admin key of every test gateway.
const adminKey = "mr2_console_test_0123456789abcdef"

// testModel is the model the fake backend serves.
const testModel = "qwen3-8b"

var (
	plugins testutil.PluginSet
	// browser is the shared Chromium; each test opens tabs in it.
	browser context.Context
	// runLogs sees every gateway log line: TestMain fails the run if the
	// admin key appears in one.
	runLogs = testutil.NewSecretScanner(adminKey)
)

func TestMain(m *testing.M) {
	// The identity provider's example server logs every request through
	// slog's default logger.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	var err error
	if plugins, err = testutil.BuildPlugins(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var stop func()
	browser, stop, err = startChromium()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	testutil.Cleanup()
	testsvc.StopAll()
	if leaks, scanned := runLogs.Leaks(); len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the admin key appeared in %d of %d log lines\n", len(leaks), scanned)
		code = 1
	}
	os.Exit(code)
}

// chromiumPath finds Debian's Chromium (deploy/scripts/test-services.sh
// installs it), or $CHROMIUM.
func chromiumPath() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("console tests: no Chromium found (apt-get install chromium, or make test-deps)")
}

// startChromium starts one headless Chromium with a fresh profile.
func startChromium() (context.Context, func(), error) {
	path, err := chromiumPath()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "mindrouter-chromium-")
	if err != nil {
		return nil, nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		cancelBrowser()
		cancelAlloc()
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("start chromium: %w", err)
	}
	return bctx, func() { cancelBrowser(); cancelAlloc(); _ = os.RemoveAll(dir) }, nil
}

// newTab opens a tab of its own (own cookies: an incognito-like browser
// context) for one test, closed at its end.
func newTab(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancel() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return ctx
}

// env is a gateway with its console, in front of one fakellm backend.
type env struct {
	gw     *gateway.Gateway
	base   string // http://127.0.0.1:port
	fake   *fakellm.Server
	client openai.Client // as the admin
}

// console is the console's URL of path ("keys", "login", "").
func (e *env) console(path string) string { return e.base + "/console/" + path }

// startEnv starts a gateway on loopback with a fresh SQLite store and
// embedded audit; extraYAML is appended to its config, "{BASE}" in it
// replaced by the gateway's http://host:port.
func startEnv(t *testing.T, fc fakellm.Config, extraYAML string) *env {
	t.Helper()
	return startEnvWith(t, fc, func(string) string { return extraYAML })
}

// startEnvWith is startEnv with the extra config made from the gateway's
// base URL (for what must know it first, such as an identity provider).
func startEnvWith(t *testing.T, fc fakellm.Config, extra func(base string) string) *env {
	t.Helper()
	fc.Engine = "vllm"
	if fc.Models == nil {
		fc.Models = []string{testModel}
	}
	fc.Logger = slog.New(slog.DiscardHandler)
	fake, err := fakellm.New(fc)
	if err != nil {
		t.Fatal(err)
	}
	fln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = fake.Serve(fln) }()
	t.Cleanup(fake.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	extraYAML := strings.ReplaceAll(extra(base), "{BASE}", base)
	d := t.TempDir()
	y := fmt.Sprintf(`listen: 127.0.0.1:0
plugins: %s
data_dir: %s
backends:
  - {name: gpu1, engine: vllm, url: "http://%s", max_concurrent: 8}
%s`, plugins.YAML, d, fln.Addr(), extraYAML)
	cfg, err := config.Parse([]byte(y), ".")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store.DSN = filepath.Join(d, "mindrouter.db")
	cfg.Audit.Spool, cfg.Audit.Embedded = filepath.Join(d, "spool"), filepath.Join(d, "audit.db")
	gw, err := gateway.Start(context.Background(), gateway.Options{Config: cfg, AdminKey: adminKey, Logger: runLogs.Logger(), Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = gw.Close(ctx)
	})
	e := &env{gw: gw, base: base, fake: fake}
	e.client = openai.NewClient(option.WithBaseURL(e.base+"/v1/"), option.WithAPIKey(adminKey), option.WithMaxRetries(0))
	return e
}

// signInWithKey signs tab in with key through the login form and waits
// for the home page.
func signInWithKey(t *testing.T, tab context.Context, e *env, key string) {
	t.Helper()
	run(t, tab,
		chromedp.Navigate(e.console("login")),
		chromedp.WaitVisible(chromedp.ID("api_key")),
		chromedp.SendKeys(chromedp.ID("api_key"), key),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("tokens")),
	)
}

// run runs actions in tab, failing the test with the page's text on error.
func run(t *testing.T, tab context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v\n%s", err, pageDump(tab))
	}
}

// stepTimeout bounds one run or get, well inside the tab's life, so a
// failure can still show the page.
const stepTimeout = 20 * time.Second

// get runs one action that returns a value.
func get[T any](t *testing.T, tab context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v\n%s", err, pageDump(tab))
	}
	return v
}

// pageDump is where tab is and what its page says, for a failure.
func pageDump(tab context.Context) string {
	ctx, cancel := context.WithTimeout(tab, 3*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	return "at " + loc + ":\n" + clip(body, 2000)
}

// text reads the text of the element the CSS selector sel matches.
func text(t *testing.T, tab context.Context, sel string) string {
	t.Helper()
	return get(t, tab, chromedp.Text(chromedp.CSS(sel)))
}

// screenshot writes docs/console-<name>.png from the page in tab when
// UPDATE_SCREENSHOTS=1 (the README's pictures come from these tests).
func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	if os.Getenv("UPDATE_SCREENSHOTS") != "1" {
		return
	}
	png := get(t, tab, chromedp.FullScreenshot(100))
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "docs", "console-"+name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int64) string { return fmt.Sprint(n) }

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return strings.TrimSpace(s)
}
