package storetest

import (
	"testing"

	"github.com/mindrouter/mindrouter/core/store"
)

// testModelAccess: a group's allowlist and a user's override round-trip
// through every read, the credential lookup (what the request path
// builds principals from) included, and a user's nil override (inherit)
// stays distinct from an empty one (every model).
func testModelAccess(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	g := store.Group{Name: "restricted", ModelAccess: []string{"llama3*", "openai/*"}}
	must(t, s.CreateGroup(ctx(t), &g), "CreateGroup")
	got, err := s.Group(ctx(t), g.ID)
	must(t, err, "Group")
	diff(t, "group model access", got.ModelAccess, []string{"llama3*", "openai/*"})
	byName, err := s.GroupByName(ctx(t), "restricted")
	must(t, err, "GroupByName")
	diff(t, "group by name model access", byName.ModelAccess, g.ModelAccess)

	inherit := newUser(t, s, g.ID, "inherit")
	got0, err := s.User(ctx(t), inherit.ID)
	must(t, err, "User inherit")
	if got0.ModelAccess != nil {
		t.Fatalf("a user created without an override reads back %v, want nil (inherit)", *got0.ModelAccess)
	}
	all := store.User{Username: "all", GroupID: g.ID, Active: true, ModelAccess: &[]string{}}
	must(t, s.CreateUser(ctx(t), &all), "CreateUser all")
	gotAll, err := s.User(ctx(t), all.ID)
	must(t, err, "User all")
	if gotAll.ModelAccess == nil || len(*gotAll.ModelAccess) != 0 {
		t.Fatalf("an empty override reads back %v, want an empty, non-nil list", gotAll.ModelAccess)
	}
	gotAll.ModelAccess = &[]string{"qwen3-8b"}
	must(t, s.UpdateUser(ctx(t), &gotAll), "UpdateUser")
	k := newKey(all.ID, "k")
	must(t, s.CreateKey(ctx(t), &k), "CreateKey")
	c, err := s.CredentialByHash(ctx(t), k.Hash)
	must(t, err, "CredentialByHash")
	if c.User.ModelAccess == nil {
		t.Fatal("credential: user override lost")
	}
	diff(t, "credential user model access", *c.User.ModelAccess, []string{"qwen3-8b"})
	diff(t, "credential group model access", c.Group.ModelAccess, []string{"llama3*", "openai/*"})

	got.ModelAccess = nil
	must(t, s.UpdateGroup(ctx(t), &got), "UpdateGroup")
	cleared, err := s.Group(ctx(t), g.ID)
	must(t, err, "Group after clearing")
	if len(cleared.ModelAccess) != 0 {
		t.Fatalf("cleared group model access = %v, want none", cleared.ModelAccess)
	}
}
