package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/mindrouter/mindrouter/core/store"
)

func testMigrate(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	v, err := s.Version(ctx(t))
	must(t, err, "Version before Migrate")
	if v != 0 {
		t.Fatalf("Version of an empty database = %d, want 0", v)
	}
	must(t, s.Migrate(ctx(t)), "Migrate")
	v1, err := s.Version(ctx(t))
	must(t, err, "Version")
	if v1 < 1 {
		t.Fatalf("Version after Migrate = %d, want ≥ 1", v1)
	}
	g := newGroup(t, s, "kept")
	must(t, s.Migrate(ctx(t)), "Migrate again")
	v2, err := s.Version(ctx(t))
	must(t, err, "Version")
	if v2 != v1 {
		t.Fatalf("Version after a second Migrate = %d, want %d", v2, v1)
	}
	got, err := s.Group(ctx(t), g.ID)
	must(t, err, "Group after a second Migrate")
	diff(t, "group after re-migrating", got, g)
}

func testSeedGroups(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	must(t, s.SeedGroups(ctx(t)), "SeedGroups")
	must(t, s.SeedGroups(ctx(t)), "SeedGroups again")
	gs, err := s.Groups(ctx(t))
	must(t, err, "Groups")
	var names []string
	for _, g := range gs {
		names = append(names, g.Name)
		if g.BudgetPeriodDays <= 0 || g.Weight <= 0 {
			t.Errorf("seeded group %q: period %d days, weight %v; want both > 0", g.Name, g.BudgetPeriodDays, g.Weight)
		}
		if g.IsAdmin != (g.Name == "admin") || g.IsAuditor != (g.Name == "auditor") {
			t.Errorf("seeded group %q: IsAdmin %v, IsAuditor %v", g.Name, g.IsAdmin, g.IsAuditor)
		}
	}
	slices.Sort(names)
	diff(t, "seeded group names", names, []string{"admin", "auditor", "faculty", "researchers", "staff", "students"})
	students, err := s.GroupByName(ctx(t), "students")
	must(t, err, "GroupByName students")
	if students.TokenBudget <= 0 || students.RPM <= 0 {
		t.Errorf("students: budget %d, RPM %d; want limits", students.TokenBudget, students.RPM)
	}
}

func testSeedGroupsNotWhenGroupsExist(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	newGroup(t, s, "custom")
	must(t, s.SeedGroups(ctx(t)), "SeedGroups")
	gs, err := s.Groups(ctx(t))
	must(t, err, "Groups")
	if len(gs) != 1 || gs[0].Name != "custom" {
		t.Fatalf("groups after seeding a non-empty table = %+v, want only custom", gs)
	}
}

func testGroups(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	a := newGroup(t, s, "alpha")
	if a.ID == 0 || a.CreatedAt.IsZero() || !a.UpdatedAt.Equal(a.CreatedAt) {
		t.Fatalf("CreateGroup did not set ID and times: %+v", a)
	}
	b := store.Group{Name: "beta", IsAdmin: true}
	must(t, s.CreateGroup(c, &b), "CreateGroup beta")
	if b.BudgetPeriodDays != 30 || b.Weight != 1 {
		t.Errorf("defaults: period %d, weight %v; want 30 and 1", b.BudgetPeriodDays, b.Weight)
	}

	got, err := s.Group(c, a.ID)
	must(t, err, "Group")
	diff(t, "Group", got, a)
	got, err = s.GroupByName(c, "beta")
	must(t, err, "GroupByName")
	diff(t, "GroupByName", got, b)
	all, err := s.Groups(c)
	must(t, err, "Groups")
	diff(t, "Groups", all, []store.Group{a, b})

	_, err = s.Group(c, 999999)
	wantErr(t, err, store.ErrNotFound, "Group of a missing ID")
	_, err = s.GroupByName(c, "nope")
	wantErr(t, err, store.ErrNotFound, "GroupByName of a missing name")
	dup := store.Group{Name: "alpha"}
	wantErr(t, s.CreateGroup(c, &dup), store.ErrConflict, "CreateGroup with a taken name")
	// Names are exact: another case is another name.
	other := store.Group{Name: "Alpha"}
	must(t, s.CreateGroup(c, &other), "CreateGroup Alpha beside alpha")

	a.Description, a.RPM, a.IsAuditor, a.TokenBudget = "changed", 99, true, 1<<40
	must(t, s.UpdateGroup(c, &a), "UpdateGroup")
	got, err = s.Group(c, a.ID)
	must(t, err, "Group after update")
	diff(t, "Group after update", got, a)
	if a.UpdatedAt.Before(a.CreatedAt) {
		t.Errorf("UpdatedAt %v before CreatedAt %v", a.UpdatedAt, a.CreatedAt)
	}
	rename := b
	rename.Name = "alpha"
	wantErr(t, s.UpdateGroup(c, &rename), store.ErrConflict, "UpdateGroup to a taken name")
	missing := store.Group{ID: 999999, Name: "missing"}
	wantErr(t, s.UpdateGroup(c, &missing), store.ErrNotFound, "UpdateGroup of a missing ID")

	u := newUser(t, s, a.ID, "member")
	wantErr(t, s.DeleteGroup(c, a.ID), store.ErrConflict, "DeleteGroup with a member")
	must(t, s.DeleteUser(c, u.ID), "DeleteUser")
	must(t, s.DeleteGroup(c, a.ID), "DeleteGroup once empty")
	_, err = s.Group(c, a.ID)
	wantErr(t, err, store.ErrNotFound, "Group after DeleteGroup")
	wantErr(t, s.DeleteGroup(c, a.ID), store.ErrNotFound, "DeleteGroup twice")
}

func testUsers(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	g := newGroup(t, s, "g")
	g2 := newGroup(t, s, "g2")
	plain := newUser(t, s, g.ID, "plain")
	over := store.User{Username: "over", Email: "o@x", FullName: "Ö Ver", GroupID: g.ID, Active: false,
		TokenBudget: ptr[int64](0), RPM: ptr(7), MaxConcurrent: ptr(1), Weight: ptr(0.5)}
	must(t, s.CreateUser(c, &over), "CreateUser with overrides")
	if over.ID == 0 || over.ID == plain.ID || over.CreatedAt.IsZero() {
		t.Fatalf("CreateUser did not set ID and times: %+v", over)
	}

	got, err := s.User(c, over.ID)
	must(t, err, "User")
	diff(t, "User with overrides (a zero override is not nil)", got, over)
	got, err = s.UserByName(c, "plain")
	must(t, err, "UserByName")
	diff(t, "UserByName", got, plain)
	if got.TokenBudget != nil || got.RPM != nil || got.MaxConcurrent != nil || got.Weight != nil {
		t.Errorf("no overrides read back as %+v", got)
	}
	_, err = s.User(c, 999999)
	wantErr(t, err, store.ErrNotFound, "User of a missing ID")
	got, err = s.UserByName(c, "PLAIN")
	must(t, err, "UserByName ignores case")
	diff(t, "UserByName in capitals", got, plain)
	_, err = s.UserByName(c, "plai")
	wantErr(t, err, store.ErrNotFound, "UserByName of a prefix")

	dup := store.User{Username: "plain", GroupID: g.ID}
	wantErr(t, s.CreateUser(c, &dup), store.ErrConflict, "CreateUser with a taken username")
	dup = store.User{Username: "Plain", GroupID: g.ID}
	wantErr(t, s.CreateUser(c, &dup), store.ErrConflict, "CreateUser with a taken username in other case")
	orphan := store.User{Username: "orphan", GroupID: 999999}
	wantErr(t, s.CreateUser(c, &orphan), store.ErrConflict, "CreateUser in a missing group")

	plain.GroupID, plain.Email, plain.Active, plain.RPM = g2.ID, "new@x", false, ptr(5)
	must(t, s.UpdateUser(c, &plain), "UpdateUser")
	got, err = s.User(c, plain.ID)
	must(t, err, "User after update")
	diff(t, "User after update", got, plain)
	plain.RPM = nil
	must(t, s.UpdateUser(c, &plain), "UpdateUser clearing an override")
	got, err = s.User(c, plain.ID)
	must(t, err, "User after clearing")
	if got.RPM != nil {
		t.Errorf("RPM override after clearing = %d, want nil", *got.RPM)
	}
	rename := plain
	rename.Username = "over"
	wantErr(t, s.UpdateUser(c, &rename), store.ErrConflict, "UpdateUser to a taken username")
	bad := plain
	bad.GroupID = 999999
	wantErr(t, s.UpdateUser(c, &bad), store.ErrConflict, "UpdateUser into a missing group")
	missing := store.User{ID: 999999, Username: "missing", GroupID: g.ID}
	wantErr(t, s.UpdateUser(c, &missing), store.ErrNotFound, "UpdateUser of a missing ID")
	wantErr(t, s.DeleteUser(c, 999999), store.ErrNotFound, "DeleteUser of a missing ID")
}

func testUsersFilter(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	g1 := newGroup(t, s, "one")
	g2 := newGroup(t, s, "two")
	var in1 []store.User
	for i := range 7 {
		in1 = append(in1, newUser(t, s, g1.ID, name("user", i)))
	}
	pct := store.User{Username: "has%percent", Email: "p@x", FullName: "Percy Mc_Pc", GroupID: g2.ID, Active: true}
	must(t, s.CreateUser(c, &pct), "CreateUser")
	carol := store.User{Username: "carol", Email: "Carol.Smith@Example.EDU", FullName: "Carol Smith", GroupID: g2.ID, Active: true}
	must(t, s.CreateUser(c, &carol), "CreateUser")

	names := func(us []store.User) []string {
		var n []string
		for _, u := range us {
			n = append(n, u.Username)
		}
		return n
	}
	for _, tc := range []struct {
		name  string
		f     store.UserFilter
		want  []string
		total int
	}{
		{"all", store.UserFilter{}, append(names(in1), "has%percent", "carol"), 9},
		{"group", store.UserFilter{GroupID: g2.ID}, []string{"has%percent", "carol"}, 2},
		{"page", store.UserFilter{GroupID: g1.ID, Offset: 2, Limit: 3}, []string{"user002", "user003", "user004"}, 7},
		{"last page", store.UserFilter{GroupID: g1.ID, Offset: 6, Limit: 3}, []string{"user006"}, 7},
		{"past the end", store.UserFilter{Offset: 50}, nil, 9},
		{"search username", store.UserFilter{Search: "user00"}, names(in1), 7},
		{"search ignores case", store.UserFilter{Search: "SMITH@example"}, []string{"carol"}, 1},
		{"search full name", store.UserFilter{Search: "percy"}, []string{"has%percent"}, 1},
		{"percent is literal", store.UserFilter{Search: "%"}, []string{"has%percent"}, 1},
		{"underscore is literal", store.UserFilter{Search: "c_p"}, []string{"has%percent"}, 1},
		{"no match", store.UserFilter{Search: "zzz"}, nil, 0},
		{"search within group", store.UserFilter{GroupID: g1.ID, Search: "carol"}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			us, total, err := s.Users(c, tc.f)
			must(t, err, "Users")
			diff(t, "users", names(us), tc.want)
			if total != tc.total {
				t.Errorf("total = %d, want %d", total, tc.total)
			}
		})
	}
	us, _, err := s.Users(c, store.UserFilter{Search: "carol"})
	must(t, err, "Users")
	diff(t, "a listed user is the whole record", us, []store.User{carol})
}

func testDeleteUserCascades(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	g := newGroup(t, s, "g")
	gone := newUser(t, s, g.ID, "gone")
	kept := newUser(t, s, g.ID, "kept")
	k1, k2, k3 := newKey(gone.ID, "a"), newKey(gone.ID, "b"), newKey(kept.ID, "c")
	for _, k := range []*store.APIKey{&k1, &k2, &k3} {
		must(t, s.CreateKey(c, k), "CreateKey")
	}
	must(t, s.SaveUsage(c, []store.Usage{
		{UserID: gone.ID, PeriodStart: at(0), TokensUsed: 10, LifetimeTokens: 10},
		{UserID: kept.ID, PeriodStart: at(0), TokensUsed: 20, LifetimeTokens: 20},
	}), "SaveUsage")

	must(t, s.DeleteUser(c, gone.ID), "DeleteUser")
	_, err := s.User(c, gone.ID)
	wantErr(t, err, store.ErrNotFound, "User after DeleteUser")
	for _, id := range []int64{k1.ID, k2.ID} {
		_, err := s.Key(c, id)
		wantErr(t, err, store.ErrNotFound, "a deleted user's key")
	}
	_, err = s.CredentialByHash(c, k1.Hash)
	wantErr(t, err, store.ErrNotFound, "CredentialByHash of a deleted user's key")
	ks, err := s.Keys(c, 0)
	must(t, err, "Keys")
	if len(ks) != 1 || ks[0].ID != k3.ID {
		t.Errorf("keys left = %+v, want only the other user's", ks)
	}
	u, err := s.Usage(c, gone.ID)
	must(t, err, "Usage of a deleted user")
	if u.TokensUsed != 0 || u.LifetimeTokens != 0 {
		t.Errorf("a deleted user's usage = %+v, want none", u)
	}
	u, err = s.Usage(c, kept.ID)
	must(t, err, "Usage")
	if u.TokensUsed != 20 {
		t.Errorf("the other user's usage = %+v, want 20 tokens", u)
	}
	// Recreating the name starts from nothing.
	again := newUser(t, s, g.ID, "gone")
	ks, err = s.Keys(c, again.ID)
	must(t, err, "Keys")
	if len(ks) != 0 || again.ID == gone.ID {
		t.Errorf("a recreated user (ID %d, was %d) has keys %+v", again.ID, gone.ID, ks)
	}
}

// UpdateGroupKeepingAdmin refuses, writing nothing, to take is_admin from
// the last admin group with an active member (an admin group whose
// members are all inactive, or that has none, does not count); other
// changes, and demotions while another admin group has an active member,
// go through; UpdateGroup itself does not check.
func testLastAdminGroup(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	a := store.Group{Name: "admins", IsAdmin: true}
	must(t, s.CreateGroup(c, &a), "CreateGroup admins")
	newUser(t, s, a.ID, "root")
	b := store.Group{Name: "ops", IsAdmin: true}
	must(t, s.CreateGroup(c, &b), "CreateGroup ops")
	idle := newUser(t, s, b.ID, "idle")
	idle.Active = false
	must(t, s.UpdateUser(c, &idle), "UpdateUser inactive")

	demote := a
	demote.IsAdmin, demote.RPM = false, 7
	wantErr(t, s.UpdateGroupKeepingAdmin(c, &demote), store.ErrLastAdmin, "demoting the last admin group with an active member")
	got, err := s.Group(c, a.ID)
	must(t, err, "Group")
	if !got.IsAdmin || got.RPM == 7 {
		t.Fatalf("the refused change was written: %+v", got)
	}
	a.RPM = 8 // still an admin group: any other change passes
	must(t, s.UpdateGroupKeepingAdmin(c, &a), "UpdateGroupKeepingAdmin of another field")
	plain := store.Group{Name: "plain"}
	must(t, s.CreateGroup(c, &plain), "CreateGroup plain")
	plain.RPM = 9
	must(t, s.UpdateGroupKeepingAdmin(c, &plain), "UpdateGroupKeepingAdmin of a group that is not admin")

	// ops gets an active member: admins may be demoted, then ops not.
	newUser(t, s, b.ID, "opal")
	demote = a
	demote.IsAdmin = false
	must(t, s.UpdateGroupKeepingAdmin(c, &demote), "demoting beside another admin group with an active member")
	b.IsAdmin = false
	wantErr(t, s.UpdateGroupKeepingAdmin(c, &b), store.ErrLastAdmin, "demoting the one admin group left")
	// UpdateGroup does not check (EnsureAdmin's repairs, tests).
	must(t, s.UpdateGroup(c, &b), "UpdateGroup demoting the last admin group")
}

// Two demotions of the last two admin groups at once, each with an
// active member: exactly one passes, whatever the interleaving (the
// store serialises them; each alone would have passed a check made
// before the other's write).
func testLastAdminGroupConcurrent(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	for round := range 5 {
		var gs [2]store.Group
		for i := range gs {
			gs[i] = store.Group{Name: name("admin", round*2+i), IsAdmin: true}
			must(t, s.CreateGroup(c, &gs[i]), "CreateGroup")
			newUser(t, s, gs[i].ID, name("member", round*2+i))
		}
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			errs  [2]error
		)
		for i := range gs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g := gs[i]
				g.IsAdmin = false
				<-start
				errs[i] = s.UpdateGroupKeepingAdmin(c, &g)
			}()
		}
		close(start)
		wg.Wait()
		passed := 0
		for _, err := range errs {
			switch {
			case err == nil:
				passed++
			case !errors.Is(err, store.ErrLastAdmin):
				t.Fatalf("round %d: UpdateGroupKeepingAdmin: %v", round, err)
			}
		}
		if passed != 1 {
			t.Fatalf("round %d: %d of two concurrent demotions of the last two admin groups passed, want 1 (%v)", round, passed, errs)
		}
		// The group left admin stays so; demote it the unchecked way
		// for the next round.
		for i, err := range errs {
			if err != nil {
				g := gs[i]
				g.IsAdmin = false
				must(t, s.UpdateGroup(c, &g), "UpdateGroup")
			}
		}
	}
}
