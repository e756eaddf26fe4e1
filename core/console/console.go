package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/mindrouter/mindrouter/core/admin"
	"github.com/mindrouter/mindrouter/core/audit"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Role is what a page needs of the session's principal.
type Role int

// Roles, each including the ones before it.
const (
	RolePublic Role = iota // no session (the login pages)
	RoleUser               // any signed-in user
	RoleAudit              // the audit (read-only admin) or admin scope
	RoleAdmin              // the admin scope
)

// Models lists the models the gateway serves now.
type Models interface {
	Models() canon.ModelList
}

// Options configure a Console. Store, Auth and Admin are required.
type Options struct {
	Config config.Console
	// Store holds users, groups and keys.
	Store store.Store
	// Sessions holds sessions (RedisSessions or StoreSessions).
	Sessions SessionStore
	// Auth verifies the API keys of key sign-in.
	Auth auth.Authenticator
	// Admin serves the admin API the pages dispatch to.
	Admin *admin.Handler
	// Audit reads the request audit (nil: no request history or chart).
	Audit audit.Searcher
	// Usage reads daily tokens (nil: over Audit).
	Usage UsageSource
	// Models lists the models served (nil: none).
	Models Models
	// TLS says the console's listener serves HTTPS (the cookie is Secure).
	TLS bool
	// BaseURL is how clients reach the gateway's API, for the connection
	// snippets ("": from each request's Host).
	BaseURL string
	Log     *slog.Logger
	Now     func() time.Time
}

// Console serves the web console. Safe for concurrent use once built.
type Console struct {
	o      Options
	prefix string // "/console/"
	mux    *http.ServeMux
	pages  map[string]*template.Template
	sess   *sessions
	oidc   *oidcClient // nil: no single sign-on
	usage  UsageSource
	log    *slog.Logger
	now    func() time.Time
	secure bool
}

// New builds the console and registers its pages; with console.oidc set
// it discovers the provider (ctx bounds that).
func New(ctx context.Context, o Options) (*Console, error) {
	if o.Store == nil || o.Auth == nil || o.Admin == nil || o.Sessions == nil {
		return nil, errors.New("console: Store, Auth, Admin and Sessions are required")
	}
	c := &Console{o: o, prefix: o.Config.Prefix, mux: http.NewServeMux(), log: o.Log, now: o.Now,
		secure: o.TLS || o.Config.SecureCookie}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = c.log.With("component", "console")
	if c.now == nil {
		c.now = time.Now
	}
	if c.prefix == "" {
		c.prefix = "/console/"
	}
	c.sess = &sessions{st: o.Sessions, exp: Expiry{Idle: o.Config.SessionIdle.D(), Max: o.Config.SessionMax.D()}, now: c.now}
	c.usage = o.Usage
	if c.usage == nil && o.Audit != nil {
		c.usage = AuditUsage(o.Audit, c.now)
	}
	var err error
	if c.pages, err = parsePages(c.funcs()); err != nil {
		return nil, err
	}
	if o.Config.OIDC.On() {
		if c.oidc, err = newOIDC(ctx, o.Config.OIDC); err != nil {
			return nil, err
		}
	}
	static, _ := fs.Sub(staticFS, "static")
	c.mux.Handle("GET "+c.prefix+"static/", http.StripPrefix(c.prefix+"static/", staticFiles(static)))
	c.registerAuth()
	c.registerUser()
	c.registerAdmin()
	return c, nil
}

// Prefix is the path the console is served under.
func (c *Console) Prefix() string { return c.prefix }

// parsePages builds one template set per page: layout.html with the page's
// file, which defines "title" and "content".
func parsePages(funcs template.FuncMap) (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console: parse layout: %w", err)
	}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: list templates: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, f := range files {
		name := path.Base(f)
		if name == "layout.html" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, f)
		if err != nil {
			return nil, fmt.Errorf("console: parse %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// handler serves one page for a request whose session holds the page's
// Role.
type handler func(w http.ResponseWriter, r *http.Request, rq *Request)

// page registers h at pattern ("GET /keys", "POST /keys/{id}/revoke",
// relative to the prefix; "GET /{$}" is the home page) for sessions
// holding need. Any method but GET and HEAD must carry the CSRF token.
func (c *Console) page(pattern string, need Role, h handler) {
	method, p, ok := strings.Cut(pattern, " ")
	if !ok {
		panic("console: page pattern needs a method: " + pattern)
	}
	full := method + " " + strings.TrimSuffix(c.prefix, "/") + p
	c.mux.HandleFunc(full, func(w http.ResponseWriter, r *http.Request) { c.serve(w, r, need, h) })
}

// ServeHTTP answers a request under the prefix.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", csp)
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "same-origin")
	// Forms are small; the largest, an admin's CSV import, stays under this.
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if r.URL.Path == strings.TrimSuffix(c.prefix, "/") {
		http.Redirect(w, r, c.prefix, http.StatusFound)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// maxBodyBytes bounds a console request's body.
const maxBodyBytes = 8 << 20

// csp allows the console's own files and nothing inline; images may be
// data: URLs (none are today, but the SVG chart might move into one).
const csp = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (c *Console) serve(w http.ResponseWriter, r *http.Request, need Role, h handler) {
	w.Header().Set("Cache-Control", "no-store")
	rq := &Request{c: c, r: r}
	if need == RolePublic {
		// A signed-in visitor of the login page is still recognised.
		_ = c.load(w, r, rq)
		h(w, r, rq)
		return
	}
	if err := c.load(w, r, rq); err != nil {
		c.toLogin(w, r, err)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !c.csrfOK(r, rq.Session.CSRF) {
		c.fail(w, r, rq, http.StatusForbidden, "This form has expired or did not come from the console (missing or wrong CSRF token). Reload the page and try again.")
		return
	}
	if !rq.holds(need) {
		c.fail(w, r, rq, http.StatusForbidden, "Your account may not open this page.")
		return
	}
	h(w, r, rq)
}

// toLogin answers a request without a live session: pages redirect to the
// login page, anything else is a 401.
func (c *Console) toLogin(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil && !errors.Is(err, errNoSession) && !errors.Is(err, errEnded) {
		c.log.Warn("console session", "err", err.Error())
		c.fail(w, r, &Request{c: c, r: r}, http.StatusServiceUnavailable, "Sessions cannot be read right now; retry shortly.")
		return
	}
	c.clearCookie(w)
	if r.Method != http.MethodGet {
		c.fail(w, r, &Request{c: c, r: r}, http.StatusUnauthorized, "Your session has ended. Sign in again.")
		return
	}
	to := c.prefix + "login"
	if errors.Is(err, errEnded) {
		to += "?ended=1"
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// fail renders the error page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, rq *Request, status int, msg string) {
	c.render(w, r, rq, status, "error.html", "Error", map[string]any{"Status": status, "Message": msg})
}

// flashes are the notes a redirect may ask a page to show (?done=...): a
// fixed set, so a link cannot put words of its own on a console page.
var flashes = map[string]string{
	"revoked": "Key revoked.", "saved": "Saved.", "created": "Created.", "deleted": "Deleted.", "imported": "Imported.",
	// the admin pages'
	"group-saved":        "Group saved: its users' keys pick it up within a second.",
	"group-created":      "Group created.",
	"group-deleted":      "Group deleted.",
	"user-created":       "User created.",
	"user-deleted":       "User deleted: their keys and sessions stop working.",
	"user-disabled":      "User disabled: their sessions and keys stop working.",
	"user-enabled":       "User enabled.",
	"key-revoked":        "Key revoked: it stops working on every replica within a second.",
	"backend-registered": "Backend registered; it is probed now.",
	"backend-saved":      "Backend saved.",
	"backend-deleted":    "Backend deleted.",
	"backend-enable":     "Backend enabled.",
	"backend-disable":    "Backend disabled.",
	"backend-drain":      "Backend draining: it takes no new requests.",
	"backend-refresh":    "Backend refreshed.",
	"backend-unapplied":  "Stored, but the live registry did not take the change; the server log says why.",
	"node-registered":    "Node registered; refresh it to start polling its sidecar.",
	"node-saved":         "Node saved; refresh it to apply a new sidecar address or key.",
	"node-deleted":       "Node deleted.",
	"node-refreshed":     "Node refreshed: the gateway polls its sidecar.",
}

// view is what every template gets.
type view struct {
	Title   string
	Prefix  string
	Req     *Request
	Data    any
	Flash   string
	OIDC    bool
	Version string
}

// render writes page name with data.
func (c *Console) render(w http.ResponseWriter, r *http.Request, rq *Request, status int, name, title string, data any) {
	t, ok := c.pages[name]
	if !ok {
		c.log.Error("console: no template", "name", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	v := view{Title: title, Prefix: c.prefix, Req: rq, Data: data, Flash: flashes[r.URL.Query().Get("done")], OIDC: c.oidc != nil}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout.html", v); err != nil {
		c.log.Error("console: render", "page", name, "err", err.Error())
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// staticFiles serves the embedded assets; they change only with the
// binary, so a day's caching is safe (the layout names them with the
// version in the query).
func staticFiles(f fs.FS) http.Handler {
	fsrv := http.FileServerFS(f)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") || r.URL.Path == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=86400")
		fsrv.ServeHTTP(w, r)
	})
}
