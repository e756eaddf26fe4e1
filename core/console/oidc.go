package console

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/store"
)

// oidcClient signs users in through an OpenID Connect provider. The
// provider is discovered at the first sign-in (and again after a failed
// discovery), so a provider that is down does not stop the gateway.
type oidcClient struct {
	cfg  config.OIDC
	base context.Context // outlives requests: the key set refreshes with it

	mu       sync.Mutex
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	oauth    *oauth2.Config
}

func newOIDC(ctx context.Context, cfg config.OIDC) (*oidcClient, error) {
	return &oidcClient{cfg: cfg, base: context.WithoutCancel(ctx)}, nil
}

// setup discovers the provider once.
func (o *oidcClient) setup(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.oauth != nil {
		return o.oauth, o.verifier, nil
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(dctx, o.cfg.Issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("discover OpenID provider %s: %w", o.cfg.Issuer, err)
	}
	// The key set fetches keys later, with the context it was made with.
	keys := oidc.NewRemoteKeySet(o.base, jwksURL(p))
	o.verifier = oidc.NewVerifier(o.cfg.Issuer, keys, &oidc.Config{ClientID: o.cfg.ClientID})
	o.provider = p
	o.oauth = &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: o.cfg.RedirectURL, Scopes: append([]string{oidc.ScopeOpenID}, o.cfg.Scopes...)}
	return o.oauth, o.verifier, nil
}

func jwksURL(p *oidc.Provider) string {
	var c struct {
		JWKS string `json:"jwks_uri"`
	}
	_ = p.Claims(&c)
	return c.JWKS
}

// oidcStart sends the browser to the provider with a fresh state, nonce
// and PKCE verifier (S256), kept server-side under the state.
func (c *Console) oidcStart(w http.ResponseWriter, r *http.Request, rq *Request) {
	if c.oidc == nil {
		c.fail(w, r, rq, http.StatusNotFound, "Single sign-on is not configured.")
		return
	}
	oc, _, err := c.oidc.setup(r.Context())
	if err != nil {
		c.log.Warn("console single sign-on", "err", err.Error())
		c.fail(w, r, rq, http.StatusBadGateway, "The identity provider cannot be reached right now; retry shortly.")
		return
	}
	state, _, err1 := token()
	nonce, _, err2 := token()
	if err := errors.Join(err1, err2); err != nil {
		c.fail(w, r, rq, http.StatusInternalServerError, "Could not start a sign-in.")
		return
	}
	p := &pending{Nonce: nonce, Verifier: oauth2.GenerateVerifier(), Created: c.now()}
	if err := c.sess.putPending(r.Context(), state, p); err != nil {
		c.log.Error("console single sign-on state", "err", err.Error())
		c.fail(w, r, rq, http.StatusServiceUnavailable, "Sessions cannot be stored right now; retry shortly.")
		return
	}
	// The state is bound to this browser too, so a callback link made for
	// another browser (an attacker's own sign-in) cannot sign this one in.
	// Lax: the provider's redirect back is a top-level GET from its site.
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: state, Path: c.prefix + "login", HttpOnly: true,
		Secure: c.secure, SameSite: http.SameSiteLaxMode, MaxAge: int(pendingTTL / time.Second)})
	http.Redirect(w, r, oc.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(p.Verifier)), http.StatusFound)
}

// stateCookie holds the state of the browser's sign-in under way.
const stateCookie = "mindrouter_console_oidc"

// oidcCallback finishes a sign-in: the state must be one this console
// issued (once), the code is exchanged with the verifier, the ID token
// verified (issuer, audience, expiry, signature) and its nonce checked.
func (c *Console) oidcCallback(w http.ResponseWriter, r *http.Request, rq *Request) {
	if c.oidc == nil {
		c.fail(w, r, rq, http.StatusNotFound, "Single sign-on is not configured.")
		return
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		c.showLogin(w, r, rq, http.StatusUnauthorized, "The identity provider refused the sign-in: "+clip(e+" "+q.Get("error_description"), 200))
		return
	}
	ctx := r.Context()
	state := q.Get("state")
	ck, cerr := r.Cookie(stateCookie)
	if cerr != nil || state == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(state)) != 1 {
		c.showLogin(w, r, rq, http.StatusBadRequest, "This sign-in was not started in this browser; start again.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Path: c.prefix + "login", MaxAge: -1})
	p, err := c.sess.takePending(ctx, state)
	if err != nil {
		c.showLogin(w, r, rq, http.StatusBadRequest, "This sign-in link is unknown, used or expired; start again.")
		return
	}
	oc, ver, err := c.oidc.setup(ctx)
	if err != nil {
		c.fail(w, r, rq, http.StatusBadGateway, "The identity provider cannot be reached right now; retry shortly.")
		return
	}
	tok, err := oc.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(p.Verifier))
	if err != nil {
		c.log.Warn("console single sign-on: code exchange", "err", err.Error())
		c.showLogin(w, r, rq, http.StatusUnauthorized, "The identity provider did not accept the sign-in code; start again.")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := ver.Verify(ctx, raw)
	if err != nil || idt.Nonce != p.Nonce {
		c.log.Warn("console single sign-on: ID token refused", "err", fmt.Sprint(err), "nonce_ok", err == nil && idt.Nonce == p.Nonce)
		c.showLogin(w, r, rq, http.StatusUnauthorized, "The identity provider's ID token was not valid for this sign-in.")
		return
	}
	claims, err := c.oidc.claims(ctx, idt, tok)
	if err != nil {
		c.log.Warn("console single sign-on: claims", "err", err.Error())
		c.showLogin(w, r, rq, http.StatusUnauthorized, "The identity provider's answer about you could not be read.")
		return
	}
	u, err := c.ssoUser(ctx, r, claims)
	if err != nil {
		var ue userError
		if errors.As(err, &ue) {
			c.showLogin(w, r, rq, http.StatusForbidden, ue.Error())
			return
		}
		c.log.Error("console single sign-on: user", "err", err.Error())
		c.showLogin(w, r, rq, http.StatusServiceUnavailable, "Your account could not be read or created right now; retry shortly.")
		return
	}
	c.startSession(w, r, rq, &Session{UserID: u.ID, Via: viaOIDC})
}

// claims are the ID token's claims, completed from the UserInfo endpoint
// when the token lacks the e-mail or the groups claim (providers may keep
// profile claims out of an ID token issued with an access token, as OIDC
// Core 5.4 says). The ID token's own claims win; UserInfo must name the
// same subject.
func (o *oidcClient) claims(ctx context.Context, idt *oidc.IDToken, tok *oauth2.Token) (map[string]any, error) {
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, fmt.Errorf("decode ID token claims: %w", err)
	}
	_, hasEmail := claims["email"]
	_, hasGroups := claims[o.cfg.GroupsClaim]
	if hasEmail && (o.cfg.GroupsClaim == "" || hasGroups) {
		return claims, nil
	}
	o.mu.Lock()
	p := o.provider
	o.mu.Unlock()
	ui, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		if hasEmail {
			return claims, nil // the groups claim is optional
		}
		return nil, fmt.Errorf("read UserInfo: %w", err)
	}
	if ui.Subject != idt.Subject {
		return nil, fmt.Errorf("UserInfo names subject %q, the ID token %q", ui.Subject, idt.Subject)
	}
	var more map[string]any
	if err := ui.Claims(&more); err != nil {
		return nil, fmt.Errorf("decode UserInfo claims: %w", err)
	}
	for k, v := range more {
		if _, ok := claims[k]; !ok {
			claims[k] = v
		}
	}
	return claims, nil
}

// userError is a sign-in refusal to show as it is.
type userError string

func (e userError) Error() string { return string(e) }

// ssoUser finds the user an ID token names, by e-mail as username, or
// creates them in the group the claims map to (first sign-in). A later
// sign-in leaves the group alone: an administrator may have moved them.
func (c *Console) ssoUser(ctx context.Context, r *http.Request, claims map[string]any) (store.User, error) {
	id, err := mapClaims(c.o.Config.OIDC, claims)
	if err != nil && !errors.Is(err, errNoGroup) {
		return store.User{}, userError(err.Error())
	}
	u, uerr := c.o.Store.UserByName(ctx, id.Username)
	if uerr == nil {
		if !u.Active {
			return u, userError("Your account is disabled; ask an administrator.")
		}
		return u, nil
	}
	if !errors.Is(uerr, store.ErrNotFound) {
		return u, uerr
	}
	if err != nil { // no group for a new user
		return u, userError("Your account cannot be created: " + err.Error() + ". Ask an administrator.")
	}
	g, err := c.o.Store.GroupByName(ctx, id.Group)
	if errors.Is(err, store.ErrNotFound) {
		c.log.Error("console single sign-on maps to a missing group", "group", id.Group)
		return u, userError("Your account cannot be created: its group " + strconv.Quote(id.Group) + " does not exist. Ask an administrator.")
	}
	if err != nil {
		return u, err
	}
	u = store.User{Username: id.Username, Email: id.Email, FullName: clip(id.Name, 200), GroupID: g.ID, Active: true}
	if err := c.o.Store.CreateUser(ctx, &u); errors.Is(err, store.ErrConflict) {
		return c.o.Store.UserByName(ctx, id.Username) // a concurrent first sign-in
	} else if err != nil {
		return u, err
	}
	det, _ := json.Marshal(map[string]any{"username": u.Username, "group": g.Name, "via": "oidc", "issuer": c.o.Config.OIDC.Issuer})
	remote, _, _ := net.SplitHostPort(r.RemoteAddr)
	if e := c.o.Store.RecordAdmin(ctx, &store.AdminEvent{At: c.now().UTC(), ActorID: u.ID, ActorKey: "console:sso",
		Action: "user.create", TargetType: "user", TargetID: strconv.FormatInt(u.ID, 10), Detail: string(det), RemoteAddr: remote}); e != nil {
		c.log.Error("record admin event", "action", "user.create", "err", e.Error())
	}
	c.log.Info("console: user created at first sign-in", "user", u.Username, "group", g.Name)
	return u, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
