package accounts

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mindrouter/mindrouter/core/allowlist"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

// defaultPeriodDays is the budget period of a group that names none.
const defaultPeriodDays = 30

// principal is who a credential speaks for, with the scopes its group
// allows and the limits that apply.
func principal(c *store.Credential) auth.Principal {
	u, g := &c.User, &c.Group
	scopes := clampScopes(ParseScopes(c.Key.Scopes), g)
	models := g.ModelAccess
	if u.ModelAccess != nil {
		models = *u.ModelAccess
	}
	days := g.BudgetPeriodDays
	if days <= 0 {
		days = defaultPeriodDays
	}
	return auth.Principal{
		KeyID:   KeyID(c.Key.Prefix, c.Key.ID),
		User:    u.Username,
		Group:   g.Name,
		Scopes:  scopes,
		Weight:  pick(u.Weight, g.Weight),
		Admin:   scopes&auth.ScopeAdmin != 0,
		UserID:  u.ID,
		GroupID: g.ID,
		KeyNum:  c.Key.ID,
		// Compiled once per verified key (the principal is cached), so
		// the request path only matches.
		Models: allowlist.Compile(models),
		Limits: auth.Limits{
			TokenBudget:  pick(u.TokenBudget, g.TokenBudget),
			BudgetPeriod: time.Duration(days) * 24 * time.Hour,
			// Periods roll from the user's creation: each user's budget
			// renews on their own day, not all at once.
			PeriodAnchor:  u.CreatedAt,
			RPM:           pick(u.RPM, g.RPM),
			MaxConcurrent: pick(u.MaxConcurrent, g.MaxConcurrent),
		},
	}
}

// KeyID is the non-secret identifier of a key in logs and audit records:
// "key:" and the 8 characters of its display prefix after "mr2_" (the log
// redactor removes anything that starts with "mr2_"), or "key:#<id>" for a
// key without a usable prefix.
func KeyID(prefix string, id int64) string {
	rest, ok := strings.CutPrefix(prefix, auth.KeyPrefix)
	if !ok || rest == "" || strings.Contains(rest, auth.KeyPrefix) {
		return "key:#" + strconv.FormatInt(id, 10)
	}
	return "key:" + rest
}

// ParseScopes reads a key's comma-separated scopes ("inference", "admin",
// "audit"; case and spaces ignored). Unknown names grant nothing (the
// reference's "apps:provision" among them). An empty list is a legacy,
// unrestricted key, as in the reference: every scope its group allows.
func ParseScopes(s string) auth.Scope {
	if strings.TrimSpace(s) == "" {
		return auth.ScopeInference | auth.ScopeAdmin | auth.ScopeAudit
	}
	var sc auth.Scope
	for name := range strings.SplitSeq(s, ",") {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "inference":
			sc |= auth.ScopeInference
		case "admin":
			sc |= auth.ScopeAdmin
		case "audit":
			sc |= auth.ScopeAudit
		}
	}
	return sc
}

// CheckScopes parses scopes given to the admin API strictly: a
// comma-separated list of "inference", "admin" and "audit", at least one.
// The error names the offending entry.
func CheckScopes(s string) (auth.Scope, error) {
	var sc auth.Scope
	for name := range strings.SplitSeq(s, ",") {
		n := strings.ToLower(strings.TrimSpace(name))
		one := ParseScopes(n)
		if n == "" || one == 0 {
			return 0, fmt.Errorf("scopes: %q is not one of inference, admin, audit", clip(strings.TrimSpace(name)))
		}
		sc |= one
	}
	return sc, nil
}

// FormatScopes is the stored spelling of sc.
func FormatScopes(sc auth.Scope) string {
	var names []string
	if sc&auth.ScopeInference != 0 {
		names = append(names, "inference")
	}
	if sc&auth.ScopeAdmin != 0 {
		names = append(names, "admin")
	}
	if sc&auth.ScopeAudit != 0 {
		names = append(names, "audit")
	}
	return strings.Join(names, ",")
}

// clampScopes removes what the group does not allow: admin for admin
// groups only, audit for admin and auditor groups. A key's scopes only
// ever remove privilege.
func clampScopes(sc auth.Scope, g *store.Group) auth.Scope {
	if !g.IsAdmin {
		sc &^= auth.ScopeAdmin
		if !g.IsAuditor {
			sc &^= auth.ScopeAudit
		}
	}
	return sc
}

// pick is the user's override when set, else the group's value.
func pick[T any](override *T, group T) T {
	if override != nil {
		return *override
	}
	return group
}

// PrincipalOf is who a credential speaks for, exactly as Authenticate
// makes it: the console rebuilds a session's principal with it from the
// stored user, group and key on every request.
func PrincipalOf(c *store.Credential) auth.Principal { return principal(c) }
