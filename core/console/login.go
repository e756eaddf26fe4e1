package console

import (
	"errors"
	"net/http"
	"strings"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

// loginCookie carries the login form's double-submit CSRF token: before
// a session exists there is no server-side token to compare with.
const loginCookie = "mindrouter_console_login"

func (c *Console) registerAuth() {
	c.page("GET /login", RolePublic, c.loginPage)
	c.page("POST /login", RolePublic, c.loginKey)
	c.page("POST /logout", RoleUser, c.logout)
	c.page("GET /login/oidc", RolePublic, c.oidcStart)
	c.page("GET /login/callback", RolePublic, c.oidcCallback)
}

type loginView struct {
	Error  string
	Ended  bool
	Token  string
	Button string
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request, rq *Request) {
	if rq.SignedIn() {
		http.Redirect(w, r, c.prefix, http.StatusSeeOther)
		return
	}
	c.showLogin(w, r, rq, http.StatusOK, "")
}

func (c *Console) showLogin(w http.ResponseWriter, r *http.Request, rq *Request, status int, msg string) {
	tok, _, err := token()
	if err != nil {
		c.fail(w, r, rq, http.StatusInternalServerError, "Could not start a sign-in.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: tok, Path: c.prefix + "login", HttpOnly: true,
		Secure: c.secure, SameSite: http.SameSiteStrictMode, MaxAge: 3600})
	c.render(w, r, rq, status, "login.html", "Sign in", loginView{Error: msg, Ended: r.URL.Query().Get("ended") != "",
		Token: tok, Button: c.o.Config.OIDC.ButtonLabel})
}

// loginKey signs in with an API key: the key's owner, with the key's
// scopes as the authenticator grants them.
func (c *Console) loginKey(w http.ResponseWriter, r *http.Request, rq *Request) {
	ck, err := r.Cookie(loginCookie)
	if err != nil || !c.csrfOK(r, ck.Value) {
		c.fail(w, r, rq, http.StatusForbidden, "This sign-in form has expired or did not come from the console (missing or wrong CSRF token). Reload the page and try again.")
		return
	}
	key := strings.TrimSpace(r.PostFormValue("api_key"))
	// The authenticator refuses anything malformed without a lookup; this
	// only gives a clearer message (ADMIN_API_KEY may have any length).
	if !strings.HasPrefix(key, auth.KeyPrefix) || len(key) > 256 {
		c.showLogin(w, r, rq, http.StatusUnauthorized, "That is not a MindRouter API key (they start with "+auth.KeyPrefix+").")
		return
	}
	p, err := c.o.Auth.Authenticate(r.Context(), []byte(key))
	switch {
	case errors.Is(err, auth.ErrBadKey) || errors.Is(err, auth.ErrNoKey):
		c.showLogin(w, r, rq, http.StatusUnauthorized, "This API key is unknown, revoked or expired.")
		return
	case store.Unavailable(err):
		c.showLogin(w, r, rq, http.StatusServiceUnavailable, "The account store is unavailable right now; retry shortly.")
		return
	case err != nil:
		c.log.Error("console key sign-in", "err", err.Error())
		c.showLogin(w, r, rq, http.StatusInternalServerError, "Sign-in failed on the server; it has been logged.")
		return
	case p.UserID == 0 || p.KeyNum == 0:
		c.showLogin(w, r, rq, http.StatusForbidden, "This key belongs to no user account, so it cannot sign in to the console.")
		return
	}
	c.startSession(w, r, rq, &Session{UserID: p.UserID, KeyID: p.KeyNum, Via: viaKey})
}

// startSession stores s, sets the cookie and goes to the home page.
func (c *Console) startSession(w http.ResponseWriter, r *http.Request, rq *Request, s *Session) {
	if rq.Session != nil { // a new sign-in replaces the old session
		_ = c.sess.end(r.Context(), rq.Session)
	}
	tok, err := c.sess.create(r.Context(), s)
	if err != nil {
		c.log.Error("console session", "err", err.Error())
		c.fail(w, r, rq, http.StatusServiceUnavailable, "Sessions cannot be stored right now; retry shortly.")
		return
	}
	c.setCookie(w, tok)
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Path: c.prefix + "login", MaxAge: -1})
	http.Redirect(w, r, c.prefix, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, rq *Request) {
	if err := c.sess.end(r.Context(), rq.Session); err != nil {
		c.log.Warn("console logout", "err", err.Error())
	}
	c.clearCookie(w)
	http.Redirect(w, r, c.prefix+"login", http.StatusSeeOther)
}
