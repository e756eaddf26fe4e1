package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
)

func testKeys(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	g := newGroup(t, s, "g")
	u1 := newUser(t, s, g.ID, "u1")
	u2 := newUser(t, s, g.ID, "u2")

	k := newKey(u1.ID, "laptop")
	k.ExpiresAt = ptr(at(86400))
	must(t, s.CreateKey(c, &k), "CreateKey")
	if k.ID == 0 || k.Status != store.KeyActive || k.CreatedAt.IsZero() {
		t.Fatalf("CreateKey did not set ID, status and CreatedAt: %+v", k)
	}
	imported := store.APIKey{UserID: u1.ID, Name: "old", Prefix: "mr2_abcdefgh",
		Argon2: "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo", Scopes: "inference,admin",
		UsageCount: 17, LastUsedAt: ptr(at(-5)), CreatedAt: at(-100)}
	must(t, s.CreateKey(c, &imported), "CreateKey imported (no hash)")
	imported2 := store.APIKey{UserID: u2.ID, Prefix: "mr2_zzzzzzzz", Argon2: "$argon2id$v=19$m=65536,t=3,p=4$eA$eQ", Scopes: "inference"}
	must(t, s.CreateKey(c, &imported2), "a second key without a hash (NULL hashes do not collide)")
	k3 := newKey(u2.ID, "")
	must(t, s.CreateKey(c, &k3), "CreateKey")

	got, err := s.Key(c, k.ID)
	must(t, err, "Key")
	diff(t, "Key", got, k)
	got, err = s.Key(c, imported.ID)
	must(t, err, "Key imported")
	diff(t, "imported Key", got, imported)
	if got.Hash != nil {
		t.Errorf("an imported key's hash = %x, want nil", got.Hash)
	}
	_, err = s.Key(c, 999999)
	wantErr(t, err, store.ErrNotFound, "Key of a missing ID")

	ks, err := s.Keys(c, u1.ID)
	must(t, err, "Keys(u1)")
	diff(t, "Keys(u1)", ks, []store.APIKey{k, imported})
	ks, err = s.Keys(c, 0)
	must(t, err, "Keys(0)")
	diff(t, "Keys(0)", ks, []store.APIKey{k, imported, imported2, k3})
	ks, err = s.Keys(c, 999999)
	must(t, err, "Keys of a missing user")
	if len(ks) != 0 {
		t.Errorf("Keys of a missing user = %+v", ks)
	}

	dup := newKey(u2.ID, "dup")
	dup.Hash = k.Hash
	wantErr(t, s.CreateKey(c, &dup), store.ErrConflict, "CreateKey with a taken hash")
	orphan := newKey(999999, "orphan")
	wantErr(t, s.CreateKey(c, &orphan), store.ErrConflict, "CreateKey for a missing user")
}

func testCredentials(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	g := newGroup(t, s, "g")
	other := newGroup(t, s, "other")
	u := store.User{Username: "u", GroupID: g.ID, Active: true, RPM: ptr(3)}
	must(t, s.CreateUser(c, &u), "CreateUser")
	v := newUser(t, s, other.ID, "v")
	k := newKey(u.ID, "k")
	must(t, s.CreateKey(c, &k), "CreateKey")
	kv := newKey(v.ID, "kv")
	must(t, s.CreateKey(c, &kv), "CreateKey")

	cred, err := s.CredentialByHash(c, k.Hash)
	must(t, err, "CredentialByHash")
	diff(t, "CredentialByHash", cred, store.Credential{Key: k, User: u, Group: g})
	cred, err = s.CredentialByHash(c, kv.Hash)
	must(t, err, "CredentialByHash")
	diff(t, "CredentialByHash", cred, store.Credential{Key: kv, User: v, Group: other})
	unknown := newKey(u.ID, "")
	_, err = s.CredentialByHash(c, unknown.Hash)
	wantErr(t, err, store.ErrNotFound, "CredentialByHash of an unknown hash")

	// A revoked or expired key is still found: the caller judges it.
	must(t, s.RevokeKey(c, k.ID, at(0)), "RevokeKey")
	cred, err = s.CredentialByHash(c, k.Hash)
	must(t, err, "CredentialByHash of a revoked key")
	if cred.Key.Status != store.KeyRevoked {
		t.Errorf("status = %q, want revoked", cred.Key.Status)
	}

	// By prefix: only imported keys (Argon2 set), several may share one.
	a := store.APIKey{UserID: u.ID, Prefix: "mr2_shared01", Argon2: "$argon2id$v=19$m=1,t=1,p=1$YQ$YQ", Scopes: "inference"}
	b := store.APIKey{UserID: v.ID, Prefix: "mr2_shared01", Argon2: "$argon2id$v=19$m=1,t=1,p=1$Yg$Yg", Scopes: "inference"}
	issued := newKey(u.ID, "issued")
	issued.Prefix = "mr2_shared01"
	for _, k := range []*store.APIKey{&a, &b, &issued} {
		must(t, s.CreateKey(c, k), "CreateKey")
	}
	creds, err := s.CredentialsByPrefix(c, "mr2_shared01")
	must(t, err, "CredentialsByPrefix")
	diff(t, "CredentialsByPrefix", creds, []store.Credential{{Key: a, User: u, Group: g}, {Key: b, User: v, Group: other}})
	creds, err = s.CredentialsByPrefix(c, "mr2_nothing0")
	must(t, err, "CredentialsByPrefix of an unknown prefix")
	if len(creds) != 0 {
		t.Errorf("CredentialsByPrefix of an unknown prefix = %+v", creds)
	}
}

func testRevokeAndDeleteKey(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	g := newGroup(t, s, "g")
	u := newUser(t, s, g.ID, "u")
	k := newKey(u.ID, "k")
	must(t, s.CreateKey(c, &k), "CreateKey")

	must(t, s.RevokeKey(c, k.ID, at(10)), "RevokeKey")
	got, err := s.Key(c, k.ID)
	must(t, err, "Key")
	if got.Status != store.KeyRevoked || got.RevokedAt == nil || !got.RevokedAt.Equal(at(10)) {
		t.Fatalf("after RevokeKey: status %q, revoked at %v; want revoked at %v", got.Status, got.RevokedAt, at(10))
	}
	must(t, s.RevokeKey(c, k.ID, at(20)), "RevokeKey again")
	got, err = s.Key(c, k.ID)
	must(t, err, "Key")
	if !got.RevokedAt.Equal(at(10)) {
		t.Errorf("revoking twice moved revoked_at to %v, want the first %v", got.RevokedAt, at(10))
	}
	wantErr(t, s.RevokeKey(c, 999999, at(0)), store.ErrNotFound, "RevokeKey of a missing ID")

	must(t, s.DeleteKey(c, k.ID), "DeleteKey")
	_, err = s.Key(c, k.ID)
	wantErr(t, err, store.ErrNotFound, "Key after DeleteKey")
	wantErr(t, s.DeleteKey(c, k.ID), store.ErrNotFound, "DeleteKey twice")
	if _, err := s.User(c, u.ID); err != nil {
		t.Errorf("DeleteKey touched the user: %v", err)
	}
}

func testTouchKeys(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	g := newGroup(t, s, "g")
	u := newUser(t, s, g.ID, "u")
	k1, k2 := newKey(u.ID, "1"), newKey(u.ID, "2")
	must(t, s.CreateKey(c, &k1), "CreateKey")
	must(t, s.CreateKey(c, &k2), "CreateKey")

	must(t, s.TouchKeys(c, nil), "TouchKeys with nothing")
	must(t, s.TouchKeys(c, []store.KeyUse{
		{KeyID: k2.ID, LastUsed: at(5), Count: 2},
		{KeyID: k1.ID, LastUsed: at(3), Count: 1},
		{KeyID: k1.ID, LastUsed: at(9), Count: 4},  // the same key twice in a batch
		{KeyID: 999999, LastUsed: at(9), Count: 1}, // deleted meanwhile: skipped
	}), "TouchKeys")
	must(t, s.TouchKeys(c, []store.KeyUse{
		{KeyID: k1.ID, LastUsed: at(7), Count: 10}, // older than stored: count only
		{KeyID: k2.ID, LastUsed: at(8), Count: 1},
	}), "TouchKeys again")

	for _, tc := range []struct {
		id    int64
		count int64
		last  time.Time
	}{{k1.ID, 15, at(9)}, {k2.ID, 3, at(8)}} {
		got, err := s.Key(c, tc.id)
		must(t, err, "Key")
		if got.UsageCount != tc.count || got.LastUsedAt == nil || !got.LastUsedAt.Equal(tc.last) {
			t.Errorf("key %d: usage %d, last used %v; want %d at %v", tc.id, got.UsageCount, got.LastUsedAt, tc.count, tc.last)
		}
	}
}

// testKeysCapped: the cap counts active, unexpired keys, and concurrent
// creations (as from several replicas) never pass it together.
func testKeysCapped(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	g := newGroup(t, s, "g")
	u := newUser(t, s, g.ID, "u")
	now := at(0)
	live := newKey(u.ID, "live")
	must(t, s.CreateKey(c, &live), "CreateKey")
	revoked := newKey(u.ID, "revoked")
	must(t, s.CreateKey(c, &revoked), "CreateKey")
	must(t, s.RevokeKey(c, revoked.ID, at(-1)), "RevokeKey")
	expired := newKey(u.ID, "expired")
	expired.ExpiresAt = ptr(at(-10))
	must(t, s.CreateKey(c, &expired), "CreateKey")
	later := newKey(u.ID, "expires later")
	later.ExpiresAt = ptr(at(10))
	must(t, s.CreateKey(c, &later), "CreateKey")

	const max, tries = 4, 12 // two active already: two more fit
	var (
		mu     sync.Mutex
		ok     int
		limits []int
		wg     sync.WaitGroup
	)
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := newKey(u.ID, name("k", i))
			n, err := s.CreateKeyCapped(c, &k, max, now)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
				if k.ID == 0 || n >= max {
					t.Errorf("created key %+v with %d active before it", k, n)
				}
			case errors.Is(err, store.ErrLimit):
				limits = append(limits, n)
			default:
				t.Errorf("CreateKeyCapped: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 2 || len(limits) != tries-2 {
		t.Fatalf("%d concurrent creations with room for 2: %d created, %d refused", tries, ok, len(limits))
	}
	for _, n := range limits {
		if n != max {
			t.Errorf("a refusal counted %d active keys, want %d", n, max)
		}
	}
	keys, err := s.Keys(c, u.ID)
	must(t, err, "Keys")
	if len(keys) != 6 {
		t.Errorf("%d keys stored, want 6", len(keys))
	}
	// At a time the "later" key has expired, one more fits.
	k := newKey(u.ID, "after expiry")
	if _, err := s.CreateKeyCapped(c, &k, max, at(11)); err != nil {
		t.Errorf("CreateKeyCapped after a key expired: %v", err)
	}
	// max 0 is unlimited; a missing user is a conflict, as for CreateKey.
	k = newKey(u.ID, "unlimited")
	if _, err := s.CreateKeyCapped(c, &k, 0, now); err != nil {
		t.Errorf("CreateKeyCapped unlimited: %v", err)
	}
	orphan := newKey(u.ID+1000, "orphan")
	_, err = s.CreateKeyCapped(c, &orphan, max, now)
	wantErr(t, err, store.ErrConflict, "CreateKeyCapped for a missing user")
}
