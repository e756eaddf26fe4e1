package console

import (
	"errors"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/core/config"
)

func TestMapClaims(t *testing.T) {
	cfg := config.OIDC{GroupsClaim: "groups", GroupMap: map[string]string{"cs-students": "students", "faculty": "faculty"},
		EmailDomains: map[string]string{"staff.uni.example": "staff"}}
	withDefault := cfg
	withDefault.DefaultGroup = "guests"
	cases := []struct {
		name    string
		cfg     config.OIDC
		claims  map[string]any
		group   string
		user    string
		err     string // substring; "" for none
		noGroup bool
	}{
		{name: "first mapped group in claim order", cfg: cfg,
			claims: map[string]any{"email": "Ada@Uni.Example", "groups": []any{"chess", "faculty", "cs-students"}},
			group:  "faculty", user: "ada@uni.example"},
		{name: "groups claim as a string", cfg: cfg,
			claims: map[string]any{"email": "a@uni.example", "groups": "cs-students"}, group: "students", user: "a@uni.example"},
		{name: "group claim beats e-mail domain", cfg: cfg,
			claims: map[string]any{"email": "b@staff.uni.example", "groups": []any{"cs-students"}}, group: "students", user: "b@staff.uni.example"},
		{name: "e-mail domain", cfg: cfg,
			claims: map[string]any{"email": "c@staff.uni.example", "groups": []any{"chess"}}, group: "staff", user: "c@staff.uni.example"},
		{name: "subdomain is not the domain", cfg: cfg,
			claims: map[string]any{"email": "d@x.staff.uni.example"}, noGroup: true},
		{name: "default group", cfg: withDefault,
			claims: map[string]any{"email": "e@else.example"}, group: "guests", user: "e@else.example"},
		{name: "no rule, no default", cfg: cfg, claims: map[string]any{"email": "f@else.example"}, noGroup: true},
		{name: "non-string group values ignored", cfg: cfg,
			claims: map[string]any{"email": "g@uni.example", "groups": []any{42, "faculty"}}, group: "faculty", user: "g@uni.example"},
		{name: "no e-mail", cfg: withDefault, claims: map[string]any{"sub": "x"}, err: "no e-mail"},
		{name: "malformed e-mail", cfg: withDefault, claims: map[string]any{"email": "nobody@"}, err: "no e-mail"},
		{name: "unverified e-mail", cfg: withDefault, claims: map[string]any{"email": "h@uni.example", "email_verified": false}, err: "not verified"},
		{name: "groups claim not configured", cfg: config.OIDC{GroupMap: map[string]string{"x": "students"}, DefaultGroup: "guests"},
			claims: map[string]any{"email": "i@uni.example", "groups": []any{"x"}}, group: "guests", user: "i@uni.example"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := mapClaims(tc.cfg, tc.claims)
			switch {
			case tc.err != "":
				if err == nil || errors.Is(err, errNoGroup) || !contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
			case tc.noGroup:
				if !errors.Is(err, errNoGroup) {
					t.Fatalf("err = %v, want errNoGroup", err)
				}
			default:
				if err != nil || id.Group != tc.group || id.Username != tc.user {
					t.Fatalf("got %+v, %v; want group %q user %q", id, err, tc.group, tc.user)
				}
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
