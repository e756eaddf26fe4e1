package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
)

func testUsage(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	g := newGroup(t, s, "g")
	u := newUser(t, s, g.ID, "u")
	v := newUser(t, s, g.ID, "v")

	got, err := s.Usage(c, u.ID)
	must(t, err, "Usage with nothing stored")
	diff(t, "Usage with nothing stored", got, store.Usage{UserID: u.ID})

	must(t, s.SaveUsage(c, nil), "SaveUsage with nothing")
	first := store.Usage{UserID: u.ID, PeriodStart: at(0), TokensUsed: 100, LifetimeTokens: 1000, UpdatedAt: at(10)}
	must(t, s.SaveUsage(c, []store.Usage{first, {UserID: v.ID, PeriodStart: at(1), TokensUsed: 5, LifetimeTokens: 5, UpdatedAt: at(10)}}), "SaveUsage")
	got, err = s.Usage(c, u.ID)
	must(t, err, "Usage")
	diff(t, "Usage", got, first)

	// A new period: tokens drop, lifetime grows.
	next := store.Usage{UserID: u.ID, PeriodStart: at(100), TokensUsed: 7, LifetimeTokens: 1007, UpdatedAt: at(20)}
	must(t, s.SaveUsage(c, []store.Usage{next}), "SaveUsage upsert")
	got, err = s.Usage(c, u.ID)
	must(t, err, "Usage")
	diff(t, "Usage after upsert", got, next)

	// A lower lifetime (a replica that lost count) never lowers it.
	lower := store.Usage{UserID: u.ID, PeriodStart: at(100), TokensUsed: 9, LifetimeTokens: 50, UpdatedAt: at(30)}
	must(t, s.SaveUsage(c, []store.Usage{lower}), "SaveUsage with a lower lifetime")
	got, err = s.Usage(c, u.ID)
	must(t, err, "Usage")
	diff(t, "Usage after a lower lifetime", got, store.Usage{UserID: u.ID, PeriodStart: at(100), TokensUsed: 9, LifetimeTokens: 1007, UpdatedAt: at(30)})

	// Older figures (written late) do not replace newer ones.
	stale := store.Usage{UserID: u.ID, PeriodStart: at(0), TokensUsed: 99999, LifetimeTokens: 2000, UpdatedAt: at(15)}
	must(t, s.SaveUsage(c, []store.Usage{stale}), "SaveUsage with older figures")
	got, err = s.Usage(c, u.ID)
	must(t, err, "Usage")
	diff(t, "Usage after older figures", got, store.Usage{UserID: u.ID, PeriodStart: at(100), TokensUsed: 9, LifetimeTokens: 2000, UpdatedAt: at(30)})

	// A user deleted before the flush is skipped; the rest is saved.
	must(t, s.DeleteUser(c, v.ID), "DeleteUser")
	must(t, s.SaveUsage(c, []store.Usage{
		{UserID: v.ID, PeriodStart: at(0), TokensUsed: 1, LifetimeTokens: 1, UpdatedAt: at(40)},
		{UserID: u.ID, PeriodStart: at(100), TokensUsed: 10, LifetimeTokens: 2001, UpdatedAt: at(40)},
	}), "SaveUsage with a deleted user")
	got, err = s.Usage(c, u.ID)
	must(t, err, "Usage")
	if got.TokensUsed != 10 {
		t.Errorf("tokens = %d after a batch with a deleted user, want 10", got.TokensUsed)
	}
	got, err = s.Usage(c, v.ID)
	must(t, err, "Usage of the deleted user")
	diff(t, "Usage of the deleted user", got, store.Usage{UserID: v.ID})

	// A zero UpdatedAt is now.
	before := time.Now().Add(-time.Minute)
	w := newUser(t, s, g.ID, "w")
	must(t, s.SaveUsage(c, []store.Usage{{UserID: w.ID, PeriodStart: at(0), TokensUsed: 1, LifetimeTokens: 1}}), "SaveUsage")
	got, err = s.Usage(c, w.ID)
	must(t, err, "Usage")
	if got.UpdatedAt.Before(before) {
		t.Errorf("UpdatedAt of a row saved without one = %v, want about now", got.UpdatedAt)
	}
}

func testBackends(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	n := store.Node{Name: "gpu1", SidecarURL: "http://gpu1:8007"}
	must(t, s.UpsertNode(c, &n), "UpsertNode")

	b := store.Backend{Name: "vllm-a", Engine: "vllm", URL: "http://a:8000", MaxConcurrent: 8,
		Models: []string{"qwen3-8b", "llama"}, GPUIndices: []int{0, 1}, Priority: 2, NodeID: &n.ID, FromConfig: true}
	must(t, s.UpsertBackend(c, &b), "UpsertBackend insert")
	if b.ID == 0 || b.Status != store.BackendEnabled || b.CreatedAt.IsZero() {
		t.Fatalf("UpsertBackend did not set ID, status, times: %+v", b)
	}
	got, err := s.Backend(c, b.ID)
	must(t, err, "Backend")
	diff(t, "Backend", got, b)

	// The same name again updates in place.
	up := store.Backend{Name: "vllm-a", Engine: "vllm", URL: "http://a2:8000", MaxConcurrent: 4,
		Models: []string{"qwen3-8b"}, Priority: 1, FromConfig: true}
	must(t, s.UpsertBackend(c, &up), "UpsertBackend update")
	if up.ID != b.ID || !up.CreatedAt.Equal(b.CreatedAt) {
		t.Fatalf("upsert by name: ID %d created %v, want ID %d created %v", up.ID, up.CreatedAt, b.ID, b.CreatedAt)
	}
	got, err = s.Backend(c, b.ID)
	must(t, err, "Backend")
	diff(t, "Backend after upsert", got, up)
	if got.URL != "http://a2:8000" || got.NodeID != nil || len(got.GPUIndices) != 0 || !got.FromConfig {
		t.Errorf("after upsert: %+v", got)
	}

	// An admin disables it; the next start's upsert (no status) keeps that.
	got.Status = store.BackendDisabled
	must(t, s.UpdateBackend(c, &got), "UpdateBackend")
	again := store.Backend{Name: "vllm-a", Engine: "vllm", URL: "http://a2:8000", FromConfig: true}
	must(t, s.UpsertBackend(c, &again), "UpsertBackend without status")
	if again.Status != store.BackendDisabled {
		t.Errorf("status after an upsert without one = %q, want disabled", again.Status)
	}
	again.Status = store.BackendDraining
	must(t, s.UpsertBackend(c, &again), "UpsertBackend with status")
	if again.Status != store.BackendDraining {
		t.Errorf("status after an upsert with draining = %q", again.Status)
	}

	other := store.Backend{Name: "ollama-b", Engine: "ollama", URL: "http://b:11434", NodeID: &n.ID}
	must(t, s.UpsertBackend(c, &other), "UpsertBackend second")
	if other.FromConfig {
		t.Error("FromConfig set on an API-registered backend")
	}
	all, err := s.Backends(c)
	must(t, err, "Backends")
	diff(t, "Backends", all, []store.Backend{again, other})

	rename := other
	rename.Name = "vllm-a"
	wantErr(t, s.UpdateBackend(c, &rename), store.ErrConflict, "UpdateBackend to a taken name")
	badNode := store.Backend{Name: "x", Engine: "vllm", URL: "http://x", NodeID: ptr[int64](999999)}
	wantErr(t, s.UpsertBackend(c, &badNode), store.ErrConflict, "UpsertBackend on a missing node")
	missing := store.Backend{ID: 999999, Name: "missing", Engine: "vllm", URL: "http://m"}
	wantErr(t, s.UpdateBackend(c, &missing), store.ErrNotFound, "UpdateBackend of a missing ID")
	_, err = s.Backend(c, 999999)
	wantErr(t, err, store.ErrNotFound, "Backend of a missing ID")

	wantErr(t, s.DeleteNode(c, n.ID), store.ErrConflict, "DeleteNode with a backend on it")
	must(t, s.DeleteBackend(c, other.ID), "DeleteBackend")
	wantErr(t, s.DeleteBackend(c, other.ID), store.ErrNotFound, "DeleteBackend twice")
	must(t, s.DeleteNode(c, n.ID), "DeleteNode once no backend refers to it")
}

func testNodes(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	n := store.Node{Name: "gpu1", SidecarURL: "http://gpu1:8007", SidecarKey: "sk", FromConfig: true}
	must(t, s.UpsertNode(c, &n), "UpsertNode")
	if n.ID == 0 || n.Status != "enabled" {
		t.Fatalf("UpsertNode: %+v", n)
	}
	got, err := s.Node(c, n.ID)
	must(t, err, "Node")
	diff(t, "Node", got, n)

	up := store.Node{Name: "gpu1", SidecarURL: "http://gpu1:9000", SidecarKey: "sk2", FromConfig: true}
	must(t, s.UpsertNode(c, &up), "UpsertNode update")
	if up.ID != n.ID || up.SidecarURL != "http://gpu1:9000" || !up.CreatedAt.Equal(n.CreatedAt) || !up.FromConfig {
		t.Fatalf("UpsertNode by name: %+v (was %+v)", up, n)
	}
	up.Status = "disabled"
	must(t, s.UpdateNode(c, &up), "UpdateNode")
	again := store.Node{Name: "gpu1", SidecarURL: "http://gpu1:9000", FromConfig: true}
	must(t, s.UpsertNode(c, &again), "UpsertNode without status")
	if again.Status != "disabled" {
		t.Errorf("status after an upsert without one = %q, want disabled", again.Status)
	}

	m := store.Node{Name: "gpu2"}
	must(t, s.UpsertNode(c, &m), "UpsertNode second")
	all, err := s.Nodes(c)
	must(t, err, "Nodes")
	diff(t, "Nodes", all, []store.Node{again, m})
	rename := m
	rename.Name = "gpu1"
	wantErr(t, s.UpdateNode(c, &rename), store.ErrConflict, "UpdateNode to a taken name")
	missing := store.Node{ID: 999999, Name: "missing"}
	wantErr(t, s.UpdateNode(c, &missing), store.ErrNotFound, "UpdateNode of a missing ID")
	_, err = s.Node(c, 999999)
	wantErr(t, err, store.ErrNotFound, "Node of a missing ID")
	must(t, s.DeleteNode(c, m.ID), "DeleteNode")
	wantErr(t, s.DeleteNode(c, m.ID), store.ErrNotFound, "DeleteNode twice")
}

func testAdminEvents(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	evs, err := s.AdminEvents(c, 0, 10)
	must(t, err, "AdminEvents of an empty log")
	if len(evs) != 0 {
		t.Fatalf("empty log has %d events", len(evs))
	}
	var want []store.AdminEvent
	for i := range 5 {
		e := store.AdminEvent{At: at(i), ActorID: int64(i), ActorKey: "mr2_abcdefgh", Action: "user.create",
			TargetType: "user", TargetID: fmt.Sprint(100 + i), Detail: `{"username":"x"}`, RemoteAddr: "10.0.0.1"}
		must(t, s.RecordAdmin(c, &e), "RecordAdmin")
		if e.ID == 0 {
			t.Fatal("RecordAdmin did not set ID")
		}
		want = append([]store.AdminEvent{e}, want...) // newest first
	}
	evs, err = s.AdminEvents(c, 0, 0)
	must(t, err, "AdminEvents")
	diff(t, "AdminEvents", evs, want)
	evs, err = s.AdminEvents(c, 1, 2)
	must(t, err, "AdminEvents page")
	diff(t, "AdminEvents(1, 2)", evs, want[1:3])
	evs, err = s.AdminEvents(c, 5, 2)
	must(t, err, "AdminEvents past the end")
	if len(evs) != 0 {
		t.Errorf("past the end: %d events", len(evs))
	}
	e := store.AdminEvent{Action: "key.revoke", ActorKey: "cli"}
	before := time.Now().Add(-time.Minute)
	must(t, s.RecordAdmin(c, &e), "RecordAdmin without a time")
	if e.At.Before(before) {
		t.Errorf("At of an event recorded without one = %v, want about now", e.At)
	}
}

func testTimePrecision(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	g := newGroup(t, s, "g")
	u := newUser(t, s, g.ID, "u")
	// Nanoseconds and a non-UTC zone: the store keeps microseconds, in UTC.
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	exp := time.Date(2031, 12, 31, 23, 59, 58, 987654321, zone)
	k := newKey(u.ID, "k")
	k.ExpiresAt = &exp
	must(t, s.CreateKey(c, &k), "CreateKey")
	got, err := s.Key(c, k.ID)
	must(t, err, "Key")
	want := exp.UTC().Truncate(time.Microsecond)
	if got.ExpiresAt == nil || !got.ExpiresAt.Equal(want) || got.ExpiresAt.Location() != time.UTC {
		t.Fatalf("ExpiresAt read back as %v, want %v in UTC", got.ExpiresAt, want)
	}
	if !got.ExpiresAt.Equal(*k.ExpiresAt) {
		t.Errorf("CreateKey left ExpiresAt %v, which does not read back (%v)", *k.ExpiresAt, *got.ExpiresAt)
	}
	if got.CreatedAt.Location() != time.UTC || got.CreatedAt.Nanosecond()%1000 != 0 {
		t.Errorf("CreatedAt %v: want UTC, whole microseconds", got.CreatedAt)
	}
	// Microseconds apart still order correctly.
	must(t, s.TouchKeys(c, []store.KeyUse{{KeyID: k.ID, LastUsed: want, Count: 1}}), "TouchKeys")
	must(t, s.TouchKeys(c, []store.KeyUse{{KeyID: k.ID, LastUsed: want.Add(-time.Microsecond), Count: 1}}), "TouchKeys")
	got, err = s.Key(c, k.ID)
	must(t, err, "Key")
	if !got.LastUsedAt.Equal(want) {
		t.Errorf("LastUsedAt = %v, want %v (a microsecond earlier use must not win)", got.LastUsedAt, want)
	}
	must(t, s.TouchKeys(c, []store.KeyUse{{KeyID: k.ID, LastUsed: want.Add(time.Microsecond), Count: 1}}), "TouchKeys")
	got, err = s.Key(c, k.ID)
	must(t, err, "Key")
	if !got.LastUsedAt.Equal(want.Add(time.Microsecond)) {
		t.Errorf("LastUsedAt = %v, want %v (a microsecond later use wins)", got.LastUsedAt, want.Add(time.Microsecond))
	}
}

// testConcurrent creates users and keys from several goroutines at once:
// nothing is lost, no ID repeats, no error (SQLite's single writer waits).
func testConcurrent(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	c := ctx(t)
	g := newGroup(t, s, "g")
	const workers, each = 6, 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		ids  = map[int64]bool{}
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				u := store.User{Username: fmt.Sprintf("w%d-u%d", w, i), GroupID: g.ID, Active: true}
				err := s.CreateUser(c, &u)
				var k store.APIKey
				if err == nil {
					k = newKey(u.ID, "k")
					err = s.CreateKey(c, &k)
				}
				if err == nil {
					err = s.TouchKeys(c, []store.KeyUse{{KeyID: k.ID, LastUsed: at(i), Count: 1}})
				}
				if err == nil {
					_, err = s.CredentialByHash(c, k.Hash)
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					ids[u.ID] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(ids) != workers*each {
		t.Errorf("%d distinct user IDs, want %d", len(ids), workers*each)
	}
	_, total, err := s.Users(c, store.UserFilter{})
	must(t, err, "Users")
	if total != workers*each {
		t.Errorf("%d users stored, want %d", total, workers*each)
	}
	ks, err := s.Keys(c, 0)
	must(t, err, "Keys")
	if len(ks) != workers*each {
		t.Errorf("%d keys stored, want %d", len(ks), workers*each)
	}
}
