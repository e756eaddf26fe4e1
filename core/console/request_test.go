package console

import (
	"testing"

	"github.com/mindrouter/mindrouter/core/auth"
)

func TestRequest_Holds(t *testing.T) {
	p := func(s auth.Scope) *auth.Principal { return &auth.Principal{Scopes: s} }
	cases := []struct {
		name                      string
		p                         *auth.Principal
		public, user, audit, admn bool
	}{
		{"no session", nil, true, false, false, false},
		{"inference key", p(auth.ScopeInference), true, true, false, false},
		{"auditor", p(auth.ScopeInference | auth.ScopeAudit), true, true, true, false},
		{"admin", p(auth.ScopeAdmin), true, true, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rq := &Request{Principal: tc.p}
			got := []bool{rq.holds(RolePublic), rq.holds(RoleUser), rq.holds(RoleAudit), rq.holds(RoleAdmin)}
			want := []bool{tc.public, tc.user, tc.audit, tc.admn}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("holds(role %d) = %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
	saved := adminNav
	t.Cleanup(func() { adminNav = saved })
	adminNav = []NavLink{{Path: "admin/queue", Label: "Queue", Need: RoleAudit}, {Path: "admin/users", Label: "Users", Need: RoleAdmin}}
	if n := len((&Request{Principal: p(auth.ScopeAudit)}).AdminNav()); n != 1 {
		t.Fatalf("an auditor sees %d admin links, want 1", n)
	}
	if n := len((&Request{Principal: p(auth.ScopeInference)}).AdminNav()); n != 0 {
		t.Fatalf("a user sees %d admin links", n)
	}
}
