package admin

import (
	"fmt"

	"github.com/mindrouter/mindrouter/core/auth"
)

// The self-service API: any valid key, its own user only.

// meView is GET /api/me.
type meView struct {
	UserID    int64     `json:"user_id"`
	Username  string    `json:"username"`
	Email     string    `json:"email"`
	FullName  string    `json:"full_name"`
	GroupID   int64     `json:"group_id"`
	Group     string    `json:"group"`
	IsAdmin   bool      `json:"is_admin"`
	KeyID     int64     `json:"key_id"`
	KeyPrefix string    `json:"key_prefix"`
	Scopes    []string  `json:"scopes"` // the calling key's, as enforced
	Limits    *meLimits `json:"limits"`
}

type meLimits struct {
	TokenBudget      int64   `json:"token_budget"` // 0: unlimited
	BudgetPeriodDays int     `json:"budget_period_days"`
	RPM              int     `json:"rpm_limit"`
	MaxConcurrent    int     `json:"max_concurrent"`
	Weight           float64 `json:"scheduler_weight"`
	KeyExpiryDays    int     `json:"api_key_expiry_days"`
	MaxKeys          int     `json:"max_api_keys"`
}

func scopeNames(s auth.Scope) []string {
	out := []string{}
	for _, n := range []string{"inference", "admin", "audit"} {
		if s&scopeBits[n] != 0 {
			out = append(out, n)
		}
	}
	return out
}

// noUser answers a key no stored user backs (the bootstrap ADMIN_API_KEY
// without accounts): it has no usage or keys of its own.
func noUser() error {
	return notFound("The calling key belongs to no user account (the bootstrap admin key)")
}

func (h *Handler) me(c *call) (any, error) {
	p := c.p
	v := meView{UserID: p.UserID, Username: p.User, Group: p.Group, GroupID: p.GroupID, IsAdmin: p.Admin, KeyID: p.KeyNum, Scopes: scopeNames(p.Scopes)}
	if p.UserID == 0 {
		return v, nil
	}
	u, g, err := h.userAndGroup(c, p.UserID)
	if err != nil {
		return nil, err
	}
	l := EffectiveLimits(u, g)
	w := g.Weight
	if u.Weight != nil {
		w = *u.Weight
	}
	v.Username, v.Email, v.FullName, v.GroupID, v.Group = u.Username, u.Email, u.FullName, g.ID, g.Name
	v.Limits = &meLimits{TokenBudget: l.TokenBudget, BudgetPeriodDays: int(l.BudgetPeriod.Hours() / 24), RPM: l.RPM,
		MaxConcurrent: l.MaxConcurrent, Weight: w, KeyExpiryDays: g.KeyExpiryDays, MaxKeys: g.MaxKeys}
	if p.KeyNum != 0 {
		if k, err := h.st.Key(c.ctx, p.KeyNum); err == nil && k.UserID == u.ID {
			v.KeyPrefix = k.Prefix
		}
	}
	return v, nil
}

func (h *Handler) meUsage(c *call) (any, error) {
	if c.p.UserID == 0 {
		return nil, noUser()
	}
	u, g, err := h.userAndGroup(c, c.p.UserID)
	if err != nil {
		return nil, err
	}
	return h.usage(c, u, g)
}

func (h *Handler) meKeys(c *call) (any, error) {
	if c.p.UserID == 0 {
		return nil, noUser()
	}
	u, err := h.user(c, c.p.UserID)
	if err != nil {
		return nil, err
	}
	keys, err := h.st.Keys(c.ctx, u.ID)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	now := h.now()
	out := make([]keyView, 0, len(keys))
	for _, k := range keys {
		out = append(out, viewKey(k, u.Username, now))
	}
	return map[string]any{"api_keys": out}, nil
}

func (h *Handler) meCreateKey(c *call) (any, error) {
	if c.p.UserID == 0 {
		return nil, noUser()
	}
	u, err := h.user(c, c.p.UserID)
	if err != nil {
		return nil, err
	}
	return h.issueKey(c, u, true)
}

// meRevokeKey revokes one of the caller's keys; another user's key is
// "not found", exactly like an unknown id.
func (h *Handler) meRevokeKey(c *call) (any, error) {
	if c.p.UserID == 0 {
		return nil, noUser()
	}
	k, err := h.key(c, c.id())
	if err != nil {
		return nil, err
	}
	if k.UserID != c.p.UserID {
		return nil, notFound("API key not found")
	}
	return h.revoke(c, k, true)
}
