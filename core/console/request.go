package console

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/mindrouter/mindrouter/core/accounts"
	"github.com/mindrouter/mindrouter/core/admin"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

// errEnded is a session ended by a change to its user or key.
var errEnded = errors.New("console: session ended")

// cookieName is the session cookie.
const cookieName = "mindrouter_console"

// Request is one page request of a signed-in session (Session and
// Principal are nil on a public page without one). Created per request.
type Request struct {
	c         *Console
	r         *http.Request
	Session   *Session
	Principal *auth.Principal
	User      store.User
	Group     store.Group
}

// holds reports whether the principal has role.
func (rq *Request) holds(role Role) bool {
	p := rq.Principal
	switch role {
	case RolePublic:
		return true
	case RoleUser:
		return p != nil
	case RoleAudit:
		return p != nil && (p.Has(auth.ScopeAdmin) || p.Has(auth.ScopeAudit))
	case RoleAdmin:
		return p != nil && p.Has(auth.ScopeAdmin)
	}
	return false
}

// IsAdmin and IsAudit tell templates which navigation to show.
func (rq *Request) IsAdmin() bool { return rq.holds(RoleAdmin) }
func (rq *Request) IsAudit() bool { return rq.holds(RoleAudit) }

// SignedIn reports whether the request has a session.
func (rq *Request) SignedIn() bool { return rq.Principal != nil }

// CSRF is the token every form of this session carries.
func (rq *Request) CSRF() string {
	if rq.Session == nil {
		return ""
	}
	return rq.Session.CSRF
}

// Scopes names the principal's scopes.
func (rq *Request) Scopes() []string {
	if rq.Principal == nil {
		return nil
	}
	return scopeList(rq.Principal.Scopes)
}

func scopeList(s auth.Scope) []string {
	var out []string
	for _, n := range []struct {
		s    auth.Scope
		name string
	}{{auth.ScopeInference, "inference"}, {auth.ScopeAdmin, "admin"}, {auth.ScopeAudit, "audit"}} {
		if s&n.s != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// load finds the request's session and rebuilds its principal from the
// store; a disabled user, or a revoked or expired sign-in key, ends the
// session (errEnded).
func (c *Console) load(w http.ResponseWriter, r *http.Request, rq *Request) error {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return errNoSession
	}
	ctx := r.Context()
	s, err := c.sess.get(ctx, ck.Value)
	if err != nil {
		return err
	}
	p, u, g, err := c.principal(ctx, s)
	if errors.Is(err, errEnded) || errors.Is(err, store.ErrNotFound) {
		_ = c.sess.end(ctx, s)
		c.clearCookie(w)
		return errEnded
	}
	if err != nil {
		return err
	}
	rq.Session, rq.Principal, rq.User, rq.Group = s, &p, u, g
	return nil
}

// principal is who s speaks for now: its user and group as stored, with
// its key's scopes (a key sign-in) or every scope the group allows (single
// sign-on).
func (c *Console) principal(ctx context.Context, s *Session) (auth.Principal, store.User, store.Group, error) {
	u, err := c.o.Store.User(ctx, s.UserID)
	if err != nil {
		return auth.Principal{}, u, store.Group{}, err
	}
	if !u.Active {
		return auth.Principal{}, u, store.Group{}, errEnded
	}
	g, err := c.o.Store.Group(ctx, u.GroupID)
	if err != nil {
		return auth.Principal{}, u, g, err
	}
	k := store.APIKey{ID: 0, Prefix: "console", Status: store.KeyActive}
	if s.Via == viaKey {
		if k, err = c.o.Store.Key(ctx, s.KeyID); err != nil {
			return auth.Principal{}, u, g, err
		}
		if k.Status != store.KeyActive || k.UserID != u.ID || (k.ExpiresAt != nil && !c.now().Before(*k.ExpiresAt)) {
			return auth.Principal{}, u, g, errEnded
		}
	}
	p := accounts.PrincipalOf(&store.Credential{Key: k, User: u, Group: g})
	if s.Via != viaKey {
		// The admin audit log names the acting user; the "key" says the
		// change came through the console's single sign-on.
		p.KeyID, p.KeyNum = "console:sso", 0
	}
	return p, u, g, nil
}

// Sign-in methods, Session.Via.
const (
	viaKey  = "key"
	viaOIDC = "oidc"
)

// API calls the admin API in-process as the session's principal and
// decodes a 2xx answer's JSON into out (nil: ignored). A non-2xx answer
// is an *APIError carrying the API's own message.
func (rq *Request) API(ctx context.Context, method, path string, q url.Values, body, out any) error {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
	}
	remote, _, _ := net.SplitHostPort(rq.r.RemoteAddr)
	status, resp := rq.c.o.Admin.Do(ctx, rq.Principal, admin.Request{Method: method, Path: path, Query: q, Body: raw, RemoteAddr: remote})
	if status < 200 || status > 299 {
		var d struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(resp, &d)
		return &APIError{Status: status, Detail: d.Detail}
	}
	if out == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(resp))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("decode %s %s: %w", method, path, err)
	}
	return nil
}

// APIError is an admin API answer other than 2xx.
type APIError struct {
	Status int
	Detail string
}

func (e *APIError) Error() string { return fmt.Sprintf("%d: %s", e.Status, e.Detail) }

// apiFail renders err from Request.API: the API's message with its status
// for an APIError, a logged 500 otherwise.
func (c *Console) apiFail(w http.ResponseWriter, r *http.Request, rq *Request, err error) {
	var ae *APIError
	if errors.As(err, &ae) {
		c.fail(w, r, rq, ae.Status, ae.Detail)
		return
	}
	c.log.Error("console page", "path", r.URL.Path, "err", err.Error())
	c.fail(w, r, rq, http.StatusInternalServerError, "Something went wrong on the server; it has been logged.")
}

// setCookie starts the browser's session.
func (c *Console) setCookie(w http.ResponseWriter, tok string) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: tok, Path: c.prefix, HttpOnly: true, Secure: c.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(c.sess.exp.Max / time.Second)})
}

func (c *Console) clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: c.prefix, HttpOnly: true, Secure: c.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
}

// csrfOK checks the form's csrf field against want in constant time.
func (c *Console) csrfOK(r *http.Request, want string) bool {
	got := r.PostFormValue("csrf")
	if got == "" {
		got = r.Header.Get("X-CSRF-Token")
	}
	return want != "" && got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
