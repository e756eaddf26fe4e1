package console

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mindrouter/mindrouter/core/config"
)

// identity is who an ID token names, and the group a first sign-in
// creates them in.
type identity struct {
	Username string // the e-mail address, lower case
	Email    string
	Name     string
	Group    string
}

// errNoGroup is an identity no rule maps to a group.
var errNoGroup = errors.New("no group")

// mapClaims reads an ID token's claims: the e-mail (required, and not
// marked unverified), the display name, and the group: the first value of
// the groups claim that group_map names, else the e-mail domain's entry
// in email_domains, else default_group; errNoGroup when none applies.
func mapClaims(cfg config.OIDC, claims map[string]any) (identity, error) {
	email, _ := claims["email"].(string)
	email = strings.ToLower(strings.TrimSpace(email))
	at := strings.LastIndexByte(email, '@')
	if at <= 0 || at == len(email)-1 {
		return identity{}, errors.New("the identity provider sent no e-mail address (ask for the email scope)")
	}
	if v, ok := claims["email_verified"].(bool); ok && !v {
		return identity{}, errors.New("the identity provider has not verified this e-mail address")
	}
	id := identity{Username: email, Email: email, Name: firstString(claims, "name", "preferred_username")}
	if cfg.GroupsClaim != "" {
		for _, v := range claimValues(claims[cfg.GroupsClaim]) {
			if g, ok := cfg.GroupMap[v]; ok {
				id.Group = g
				return id, nil
			}
		}
	}
	if g, ok := cfg.EmailDomains[email[at+1:]]; ok {
		id.Group = g
		return id, nil
	}
	if cfg.DefaultGroup != "" {
		id.Group = cfg.DefaultGroup
		return id, nil
	}
	return id, fmt.Errorf("%w for %s: neither a group claim nor the e-mail domain is mapped and there is no default group", errNoGroup, email)
}

// claimValues reads a claim that is a string or a list of strings.
func claimValues(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case []string:
		return v
	}
	return nil
}

func firstString(claims map[string]any, names ...string) string {
	for _, n := range names {
		if s, ok := claims[n].(string); ok && s != "" {
			return s
		}
	}
	return ""
}
