package sqlstore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

// Replicas flush key uses and usage for overlapping users at once, in
// any order, through their own handles: no batch fails (no deadlock
// surfaces) and every use is counted.
func TestConcurrentFlushes(t *testing.T) {
	for dialect, open := range dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			ctx := testCtx(t)
			a, b := open(t), open(t)
			if err := a.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			g := store.Group{Name: "g"}
			if err := a.CreateGroup(ctx, &g); err != nil {
				t.Fatal(err)
			}
			const users = 12
			var userIDs, keyIDs []int64
			for i := range users {
				u := store.User{Username: fmt.Sprint("u", i), GroupID: g.ID, Active: true}
				if err := a.CreateUser(ctx, &u); err != nil {
					t.Fatal(err)
				}
				k := store.APIKey{UserID: u.ID, Prefix: fmt.Sprintf("mr2_%08d", i), Hash: []byte(fmt.Sprintf("%032d", i))}
				if err := a.CreateKey(ctx, &k); err != nil {
					t.Fatal(err)
				}
				userIDs, keyIDs = append(userIDs, u.ID), append(keyIDs, k.ID)
			}
			const workers, rounds = 4, 8
			var (
				wg   sync.WaitGroup
				mu   sync.Mutex
				errs []error
			)
			for w := range workers {
				s := []*sqlstore.Store{a, b}[w%2]
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 1))
					for r := range rounds {
						var uses []store.KeyUse
						var rows []store.Usage
						for _, i := range rng.Perm(users) {
							uses = append(uses, store.KeyUse{KeyID: keyIDs[i], LastUsed: at(r), Count: 1})
							rows = append(rows, store.Usage{UserID: userIDs[i], PeriodStart: at(0), TokensUsed: int64(r),
								LifetimeTokens: int64(w*100 + r), UpdatedAt: at(r)})
						}
						err := errors.Join(s.TouchKeys(ctx, uses), s.SaveUsage(ctx, rows))
						if err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			for i := range users {
				k, err := a.Key(ctx, keyIDs[i])
				if err != nil {
					t.Fatal(err)
				}
				if k.UsageCount != workers*rounds {
					t.Errorf("key %d: usage count %d, want %d", i, k.UsageCount, workers*rounds)
				}
				u, err := b.Usage(ctx, userIDs[i])
				if err != nil {
					t.Fatal(err)
				}
				if want := int64((workers-1)*100 + rounds - 1); u.LifetimeTokens != want {
					t.Errorf("user %d: lifetime %d, want the largest flushed, %d", i, u.LifetimeTokens, want)
				}
			}
		})
	}
}

// at is a fixed time plus sec seconds.
func at(sec int) time.Time {
	return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC).Add(time.Duration(sec) * time.Second)
}
