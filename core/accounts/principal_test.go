package accounts

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

func TestParseScopes(t *testing.T) {
	all := auth.ScopeInference | auth.ScopeAdmin | auth.ScopeAudit
	cases := []struct {
		in   string
		want auth.Scope
	}{
		{"", all},
		{"  ", all},
		{"inference", auth.ScopeInference},
		{"inference,admin", auth.ScopeInference | auth.ScopeAdmin},
		{" Inference , AUDIT ", auth.ScopeInference | auth.ScopeAudit},
		{"apps:provision", 0},
		{"inference,apps:provision", auth.ScopeInference},
		{"admin,audit,inference", all},
	}
	for _, c := range cases {
		if got := ParseScopes(c.in); got != c.want {
			t.Errorf("ParseScopes(%q) = %b, want %b", c.in, got, c.want)
		}
	}
	if got := FormatScopes(all); got != "inference,admin,audit" {
		t.Errorf("FormatScopes(all) = %q", got)
	}
	if got := ParseScopes(FormatScopes(auth.ScopeAudit)); got != auth.ScopeAudit {
		t.Errorf("audit does not round-trip: %b", got)
	}
}

func TestPrincipal_ScopesClampedByGroup(t *testing.T) {
	all := "inference,admin,audit"
	cases := []struct {
		name             string
		keyScopes        string
		isAdmin, isAudit bool
		want             auth.Scope
	}{
		{"plain group drops admin and audit", all, false, false, auth.ScopeInference},
		{"auditor group keeps audit", all, false, true, auth.ScopeInference | auth.ScopeAudit},
		{"admin group keeps all", all, true, false, auth.ScopeInference | auth.ScopeAdmin | auth.ScopeAudit},
		{"key narrower than group", "inference", true, false, auth.ScopeInference},
		{"legacy empty scopes in plain group", "", false, false, auth.ScopeInference},
		{"audit-only key in admin group", "audit", true, false, auth.ScopeAudit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cred := store.Credential{
				Key:   store.APIKey{ID: 7, Prefix: "mr2_AbCdEfGh", Scopes: c.keyScopes},
				Group: store.Group{IsAdmin: c.isAdmin, IsAuditor: c.isAudit},
			}
			p := principal(&cred)
			if p.Scopes != c.want {
				t.Fatalf("scopes %b, want %b", p.Scopes, c.want)
			}
			if p.Admin != (c.want&auth.ScopeAdmin != 0) {
				t.Fatalf("Admin = %v with scopes %b", p.Admin, p.Scopes)
			}
		})
	}
}

func TestPrincipal_Limits(t *testing.T) {
	created := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	g := store.Group{ID: 3, Name: "staff", TokenBudget: 500_000, BudgetPeriodDays: 7, RPM: 60, MaxConcurrent: 4, Weight: 2}
	budget, rpm, conc, weight := int64(42), 5, 1, 0.5
	cases := []struct {
		name string
		user store.User
		grp  store.Group
		want auth.Principal
	}{
		{
			name: "group defaults",
			user: store.User{ID: 9, Username: "ann", CreatedAt: created},
			grp:  g,
			want: auth.Principal{KeyID: "key:AbCdEfGh", User: "ann", Group: "staff", Scopes: auth.ScopeInference, Weight: 2,
				UserID: 9, GroupID: 3, KeyNum: 7,
				Limits: auth.Limits{TokenBudget: 500_000, BudgetPeriod: 7 * 24 * time.Hour, PeriodAnchor: created, RPM: 60, MaxConcurrent: 4}},
		},
		{
			name: "user overrides",
			user: store.User{ID: 9, Username: "ann", CreatedAt: created, TokenBudget: &budget, RPM: &rpm, MaxConcurrent: &conc, Weight: &weight},
			grp:  g,
			want: auth.Principal{KeyID: "key:AbCdEfGh", User: "ann", Group: "staff", Scopes: auth.ScopeInference, Weight: 0.5,
				UserID: 9, GroupID: 3, KeyNum: 7,
				Limits: auth.Limits{TokenBudget: 42, BudgetPeriod: 7 * 24 * time.Hour, PeriodAnchor: created, RPM: 5, MaxConcurrent: 1}},
		},
		{
			name: "period defaults to 30 days",
			user: store.User{ID: 9, Username: "ann", CreatedAt: created},
			grp:  store.Group{ID: 3, Name: "staff"},
			want: auth.Principal{KeyID: "key:AbCdEfGh", User: "ann", Group: "staff", Scopes: auth.ScopeInference,
				UserID: 9, GroupID: 3, KeyNum: 7,
				Limits: auth.Limits{BudgetPeriod: 30 * 24 * time.Hour, PeriodAnchor: created}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cred := store.Credential{Key: store.APIKey{ID: 7, Prefix: "mr2_AbCdEfGh", Scopes: "inference"}, User: c.user, Group: c.grp}
			if d := cmp.Diff(c.want, principal(&cred)); d != "" {
				t.Fatalf("principal (-want +got):\n%s", d)
			}
		})
	}
}

func TestKeyID(t *testing.T) {
	cases := []struct {
		prefix string
		id     int64
		want   string
	}{
		{"mr2_AbCdEfGh", 1, "key:AbCdEfGh"},
		{"", 12, "key:#12"},
		{"sk-abcdefgh", 3, "key:#3"},
		{"mr2_", 4, "key:#4"},
		{"mr2_abmr2_cd", 5, "key:#5"},
	}
	for _, c := range cases {
		if got := KeyID(c.prefix, c.id); got != c.want {
			t.Errorf("KeyID(%q, %d) = %q, want %q", c.prefix, c.id, got, c.want)
		}
	}
}

func TestCheckScopes(t *testing.T) {
	good := map[string]auth.Scope{
		"inference":             auth.ScopeInference,
		" Admin, inference ":    auth.ScopeInference | auth.ScopeAdmin,
		"audit":                 auth.ScopeAudit,
		"inference,admin,audit": auth.ScopeInference | auth.ScopeAdmin | auth.ScopeAudit,
	}
	for in, want := range good {
		if got, err := CheckScopes(in); err != nil || got != want {
			t.Errorf("CheckScopes(%q) = %b, %v; want %b", in, got, err, want)
		}
	}
	for _, in := range []string{"", " ", "inference,", "inference,root", "apps:provision"} {
		if _, err := CheckScopes(in); err == nil {
			t.Errorf("CheckScopes(%q) accepted it", in)
		}
	}
}

func TestPrincipal_ModelAccess(t *testing.T) {
	group := store.Group{ModelAccess: []string{"llama3*"}}
	cases := []struct {
		name     string
		override *[]string
		model    string
		want     bool
	}{
		{"group list allows", nil, "llama3:8b", true},
		{"group list hides", nil, "qwen3-8b", false},
		{"user override replaces", &[]string{"qwen3*"}, "qwen3-8b", true},
		{"user override hides the group's", &[]string{"qwen3*"}, "llama3:8b", false},
		{"empty user override allows all", &[]string{}, "qwen3-8b", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cred := store.Credential{Key: store.APIKey{ID: 1, Prefix: "mr2_AbCdEfGh"}, User: store.User{ModelAccess: c.override}, Group: group}
			if got := principal(&cred).Models.Allows(c.model); got != c.want {
				t.Fatalf("Allows(%q) = %v, want %v", c.model, got, c.want)
			}
		})
	}
	if m := principal(&store.Credential{}).Models; !m.All() {
		t.Fatal("no list anywhere must allow every model")
	}
}
