// Package storetest is the behaviour every store.Store must have, as one
// suite: Run it from each implementation's tests.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mindrouter/mindrouter/core/store"
)

// Run runs the suite. open must return a store on a fresh, empty database
// (not migrated) for each call, and close it at t's end; the suite
// migrates it. The subtests run in parallel, each on its own database.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, open func(t *testing.T) store.Store)
	}{
		{"Migrate", testMigrate},
		{"SeedGroups", testSeedGroups},
		{"SeedGroupsNotWhenGroupsExist", testSeedGroupsNotWhenGroupsExist},
		{"Groups", testGroups},
		{"LastAdminGroup", testLastAdminGroup},
		{"LastAdminGroupConcurrent", testLastAdminGroupConcurrent},
		{"ModelAccess", testModelAccess},
		{"Users", testUsers},
		{"UsersFilter", testUsersFilter},
		{"DeleteUserCascades", testDeleteUserCascades},
		{"Keys", testKeys},
		{"KeysCapped", testKeysCapped},
		{"Credentials", testCredentials},
		{"RevokeAndDeleteKey", testRevokeAndDeleteKey},
		{"TouchKeys", testTouchKeys},
		{"Usage", testUsage},
		{"Backends", testBackends},
		{"Nodes", testNodes},
		{"AdminEvents", testAdminEvents},
		{"TimePrecision", testTimePrecision},
		{"Concurrent", testConcurrent},
		{"Responses", testResponses},
		{"Conversations", testConversations},
		{"ConversationAppendConcurrent", testConversationAppendConcurrent},
		{"Blobs", testBlobs},
		{"DeleteExpired", testDeleteExpired},
		{"StoredUsage", testStoredUsage},
		{"Sessions", testSessions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each on its own database
			tc.fn(t, open)
		})
	}
}

// ctx is a test context that cannot hang a run forever.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// migrated opens a store and migrates it.
func migrated(t *testing.T, open func(t *testing.T) store.Store) store.Store {
	t.Helper()
	s := open(t)
	if err := s.Migrate(ctx(t)); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// wantErr fails unless err wraps target.
func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want one wrapping %v", what, err, target)
	}
}

func diff(t *testing.T, what string, got, want any, opts ...cmp.Option) {
	t.Helper()
	opts = append(opts, cmpopts.EquateEmpty())
	if d := cmp.Diff(want, got, opts...); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// newGroup creates a group with distinctive limits.
func newGroup(t *testing.T, s store.Store, name string) store.Group {
	t.Helper()
	g := store.Group{Name: name, Description: "group " + name, TokenBudget: 12345, BudgetPeriodDays: 7, RPM: 42,
		MaxConcurrent: 3, Weight: 2.5, KeyExpiryDays: 30, MaxKeys: 5}
	must(t, s.CreateGroup(ctx(t), &g), "CreateGroup "+name)
	return g
}

func newUser(t *testing.T, s store.Store, groupID int64, name string) store.User {
	t.Helper()
	u := store.User{Username: name, Email: name + "@example.edu", FullName: "Full " + name, GroupID: groupID, Active: true}
	must(t, s.CreateUser(ctx(t), &u), "CreateUser "+name)
	return u
}

// newKey returns an issued key's record (not yet stored) for user. Safe
// in any goroutine.
func newKey(userID int64, name string) store.APIKey {
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // never fails (Go 1.24+)
	key := "mr2_" + base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(key))
	return store.APIKey{UserID: userID, Name: name, Prefix: key[:12], Hash: sum[:], Scopes: "inference"}
}

func ptr[T any](v T) *T { return &v }

// at is a fixed time with microseconds, as the store keeps them.
func at(sec int) time.Time {
	return time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC).Add(time.Duration(sec) * time.Second)
}

func name(prefix string, i int) string { return fmt.Sprintf("%s%03d", prefix, i) }
