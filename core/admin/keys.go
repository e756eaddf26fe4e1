package admin

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/accounts"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

// keyIn is the body of a key creation. expires_at absent: the group's
// api_key_expiry_days from now; null: never (admins only, or a group whose
// keys do not expire).
type keyIn struct {
	Name      string           `json:"name"`
	ExpiresAt nullable[string] `json:"expires_at"`
	Scopes    []string         `json:"scopes"` // absent: ["inference"]
}

var scopeBits = map[string]auth.Scope{"inference": auth.ScopeInference, "admin": auth.ScopeAdmin, "audit": auth.ScopeAudit}

// keyScopes validates the requested scopes against the group (400) and,
// for a key a user issues themselves, against the calling key (403: a key
// cannot mint a key stronger than itself). It returns them canonical.
func keyScopes(in []string, g store.Group, self bool, p *auth.Principal) (string, error) {
	if in == nil {
		in = []string{"inference"}
	}
	if len(in) == 0 {
		return "", badRequest("field scopes: at least one scope (inference, admin, audit)")
	}
	var want auth.Scope
	for _, s := range in {
		b, ok := scopeBits[s]
		if !ok {
			return "", badRequest("field scopes: unknown scope (use inference, admin, audit)")
		}
		want |= b
	}
	if want&auth.ScopeAdmin != 0 && !g.IsAdmin {
		return "", badRequest(fmt.Sprintf("field scopes: group '%s' does not allow the admin scope", g.Name))
	}
	if want&auth.ScopeAudit != 0 && !g.IsAdmin && !g.IsAuditor {
		return "", badRequest(fmt.Sprintf("field scopes: group '%s' does not allow the audit scope", g.Name))
	}
	if self && (want&^auth.ScopeInference != 0 && !p.Has(auth.ScopeAdmin) || !p.Has(want)) {
		return "", errorf(fasthttp.StatusForbidden, "field scopes: only administrators may give their own keys scopes beyond inference, and never beyond the calling key's")
	}
	return accounts.FormatScopes(want), nil // the spelling the authenticator reads
}

// keyExpiry resolves expires_at against the group's policy and, for a key
// a user issues themselves, the calling key's own expiry (ceiling, nil:
// none): a key cannot mint a key that outlives it, or a short-lived key
// (leaked, or handed out for an hour) would be a way to a long-lived one.
// Absent, expires_at is the earlier of the two; asked for past the
// ceiling (or never), it is a 400 that names the ceiling.
func (h *Handler) keyExpiry(in nullable[string], g store.Group, self bool, ceiling *time.Time) (*time.Time, error) {
	now := h.now().UTC()
	var def *time.Time
	if g.KeyExpiryDays > 0 {
		t := now.Add(time.Duration(g.KeyExpiryDays) * 24 * time.Hour)
		def = &t
	}
	if !self {
		ceiling = nil
	}
	outlives := func() error {
		return badRequest(fmt.Sprintf("field expires_at: a key may not outlive the key that creates it, which expires at %s",
			ceiling.UTC().Format(time.RFC3339)))
	}
	if !in.Set {
		if ceiling != nil && (def == nil || def.After(*ceiling)) {
			c := ceiling.UTC()
			return &c, nil
		}
		return def, nil
	}
	if in.Null {
		if self && def != nil {
			return nil, badRequest(fmt.Sprintf("field expires_at: keys of group '%s' expire within %d days", g.Name, g.KeyExpiryDays))
		}
		if ceiling != nil {
			return nil, outlives()
		}
		return nil, nil
	}
	t, err := parseTime("expires_at", in.V)
	if err != nil {
		return nil, err
	}
	if !t.After(now) {
		return nil, badRequest("field expires_at: must be in the future")
	}
	if self && def != nil && t.After(*def) {
		return nil, badRequest(fmt.Sprintf("field expires_at: keys of group '%s' expire within %d days", g.Name, g.KeyExpiryDays))
	}
	if ceiling != nil && t.After(*ceiling) {
		return nil, outlives()
	}
	return &t, nil
}

// callerExpiry is the calling key's expiry (nil: never), the ceiling of
// a key it issues for its own user.
func (h *Handler) callerExpiry(c *call) (*time.Time, error) {
	if c.p.KeyNum == 0 {
		return nil, nil // a key the store does not hold (auth.AdminKey): no expiry
	}
	k, err := h.st.Key(c.ctx, c.p.KeyNum)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(fasthttp.StatusForbidden, "the calling API key no longer exists")
	}
	if err != nil {
		return nil, fmt.Errorf("read the calling key: %w", err)
	}
	if k.Status != store.KeyActive || k.UserID != c.p.UserID {
		return nil, errorf(fasthttp.StatusForbidden, "the calling API key is no longer active")
	}
	return k.ExpiresAt, nil
}

// issueKey creates a key for u: the one response that carries a key.
func (h *Handler) issueKey(c *call, u store.User, self bool) (any, error) {
	var in keyIn
	if _, err := decode(c.req.Body, &in); err != nil {
		return nil, err
	}
	if err := checkText("name", in.Name, 1, 100); err != nil {
		return nil, err
	}
	g, err := h.st.Group(c.ctx, u.GroupID)
	if err != nil {
		return nil, fmt.Errorf("read group: %w", err)
	}
	scopes, err := keyScopes(in.Scopes, g, self, c.p)
	if err != nil {
		return nil, err
	}
	var ceiling *time.Time
	if self {
		if ceiling, err = h.callerExpiry(c); err != nil {
			return nil, err
		}
	}
	exp, err := h.keyExpiry(in.ExpiresAt, g, self, ceiling)
	if err != nil {
		return nil, err
	}

	full, prefix, hash, err := accounts.NewKey()
	if err != nil {
		return nil, err
	}
	k := store.APIKey{UserID: u.ID, Name: in.Name, Prefix: prefix, Hash: hash, Scopes: scopes, Status: store.KeyActive, ExpiresAt: exp, CreatedAt: h.now().UTC()}
	// The store counts and inserts in one transaction holding the user's
	// row: max_api_keys holds across replicas.
	n, err := h.st.CreateKeyCapped(c.ctx, &k, g.MaxKeys, h.now())
	if errors.Is(err, store.ErrLimit) {
		return nil, conflict(fmt.Sprintf("User '%s' already has %d active API keys, the most group '%s' allows (max_api_keys); revoke one first", u.Username, n, g.Name))
	}
	if err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	// Forget any recent "unknown key" answer about it, as accounts expects.
	h.keys.Invalidate(c.ctx, hash)
	h.record(c, "key.create", "key", k.ID, map[string]any{
		"key_prefix": prefix, "name": k.Name, "target_user_id": u.ID, "scopes": splitScopes(scopes), "expires_at": exp, "self": self,
	})
	return newKeyView{ID: k.ID, KeyPrefix: prefix, FullKey: full, Name: k.Name, UserID: u.ID, Scopes: splitScopes(scopes), ExpiresAt: exp, CreatedAt: k.CreatedAt}, nil
}

func (h *Handler) createUserKey(c *call) (any, error) {
	u, err := h.user(c, c.id())
	if err != nil {
		return nil, err
	}
	return h.issueKey(c, u, false)
}

func (h *Handler) key(c *call, id int64) (store.APIKey, error) {
	k, err := h.st.Key(c.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return k, notFound("API key not found")
	}
	if err != nil {
		return k, fmt.Errorf("read key %d: %w", id, err)
	}
	return k, nil
}

// dropKey makes every replica forget k: by hash for an issued key; an
// imported key is cached under the hash of a key nobody here knows, so by
// its user.
func (h *Handler) dropKey(c *call, k store.APIKey) {
	if k.Hash != nil {
		h.keys.Invalidate(c.ctx, k.Hash)
	} else {
		h.keys.InvalidateUser(c.ctx, k.UserID)
	}
}

// revoke revokes k (idempotent: a second revoke changes and records
// nothing).
func (h *Handler) revoke(c *call, k store.APIKey, self bool) (any, error) {
	already := k.Status == store.KeyRevoked
	if !already {
		if err := h.st.RevokeKey(c.ctx, k.ID, h.now().UTC()); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, notFound("API key not found")
			}
			return nil, fmt.Errorf("revoke key: %w", err)
		}
		h.dropKey(c, k)
		h.record(c, "key.revoke", "key", k.ID, map[string]any{"key_prefix": k.Prefix, "target_user_id": k.UserID, "self": self})
	}
	return map[string]any{"status": "revoked", "api_key_id": k.ID, "already_revoked": already}, nil
}

func (h *Handler) revokeKey(c *call) (any, error) {
	k, err := h.key(c, c.id())
	if err != nil {
		return nil, err
	}
	return h.revoke(c, k, false)
}

func (h *Handler) deleteKey(c *call) (any, error) {
	k, err := h.key(c, c.id())
	if err != nil {
		return nil, err
	}
	if err := h.st.DeleteKey(c.ctx, k.ID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, notFound("API key not found")
		}
		return nil, fmt.Errorf("delete key: %w", err)
	}
	h.dropKey(c, k)
	h.record(c, "key.delete", "key", k.ID, map[string]any{"key_prefix": k.Prefix, "target_user_id": k.UserID})
	return done("deleted", "api_key_id", k.ID), nil
}

// listKeys is GET /api-keys: every key (prefixes only), filtered by
// user_id, status (active, revoked, expired) and search (in the prefix,
// the name or the owner's username), paged.
func (h *Handler) listKeys(c *call) (any, error) {
	pg, err := c.page()
	if err != nil {
		return nil, err
	}
	uid, err := c.queryID("user_id")
	if err != nil {
		return nil, err
	}
	status := c.req.Query.Get("status")
	if status != "" && status != store.KeyActive && status != store.KeyRevoked && status != "expired" {
		return nil, badRequest("query parameter status: must be active, revoked or expired")
	}
	search, err := c.queryText("search", 200)
	if err != nil {
		return nil, err
	}
	keys, err := h.st.Keys(c.ctx, uid)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	slices.SortFunc(keys, func(a, b store.APIKey) int { return cmp.Compare(a.ID, b.ID) })
	names := map[int64]string{}
	username := func(id int64) (string, error) {
		if n, ok := names[id]; ok {
			return n, nil
		}
		u, err := h.st.User(c.ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("read user %d: %w", id, err)
		}
		names[id] = u.Username
		return u.Username, nil
	}
	now := h.now()
	search = strings.ToLower(search)
	out := []keyView{}
	total := 0
	for _, k := range keys {
		if status != "" && keyStatus(k, now) != status {
			continue
		}
		var name string
		if search != "" || (total >= pg.skip && len(out) < pg.limit) {
			if name, err = username(k.UserID); err != nil {
				return nil, err
			}
		}
		if search != "" && !strings.Contains(strings.ToLower(k.Prefix+"\x00"+k.Name+"\x00"+name), search) {
			continue
		}
		if total >= pg.skip && len(out) < pg.limit {
			out = append(out, viewKey(k, name, now))
		}
		total++
	}
	return map[string]any{"total": total, "skip": pg.skip, "limit": pg.limit, "api_keys": out}, nil
}
