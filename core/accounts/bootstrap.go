package accounts

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

// Bootstrap names: the user and group ADMIN_API_KEY belongs to.
const (
	AdminUser  = "admin"
	AdminGroup = "admin"
	// adminKeyName names the stored bootstrap key.
	adminKeyName = "ADMIN_API_KEY"
)

// adminScopes are the bootstrap key's scopes.
const adminScopes = "inference,admin,audit"

// EnsureAdmin makes ADMIN_API_KEY a working admin key: the group "admin"
// (created without limits when missing), an active
// user "admin" in it, and key among that user's active, unexpired keys
// with every scope, stored by its SHA-256 like an issued key whatever its
// length. It is idempotent, and two replicas running it at once end with
// one group, one user and one key. The environment is authoritative: a
// bootstrap key revoked or expired in the store is replaced, the admin
// group made an admin group again if it was demoted, and the admin user
// moved back to the admin group and reactivated. It returns the admin
// user.
func EnsureAdmin(ctx context.Context, st store.Store, key string) (store.User, error) {
	if len(key) < minKeyLen || len(key) > maxKeyLen || key[:len(auth.KeyPrefix)] != auth.KeyPrefix {
		return store.User{}, fmt.Errorf("accounts: ADMIN_API_KEY must start with %s and have %d to %d characters",
			auth.KeyPrefix, minKeyLen, maxKeyLen)
	}
	g, err := ensureAdminGroup(ctx, st)
	if err != nil {
		return store.User{}, err
	}
	u, err := ensureAdminUser(ctx, st, g.ID)
	if err != nil {
		return store.User{}, err
	}
	return u, ensureAdminKey(ctx, st, u.ID, key)
}

func ensureAdminGroup(ctx context.Context, st store.Store) (store.Group, error) {
	g, err := st.GroupByName(ctx, AdminGroup)
	if err == nil && !g.IsAdmin {
		// Demoted (by hand, or through the API before it refused to
		// demote the last admin group): the bootstrap key would get 403
		// everywhere, so the environment puts the flag back.
		g.IsAdmin = true
		return g, wrapBootstrap("restore is_admin of group "+AdminGroup, st.UpdateGroup(ctx, &g))
	}
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return g, wrapBootstrap("read group "+AdminGroup, err)
	}
	// As the store seeds it: no limits.
	g = store.Group{Name: AdminGroup, Description: "Administrators", BudgetPeriodDays: defaultPeriodDays,
		Weight: 4, IsAdmin: true}
	err = st.CreateGroup(ctx, &g)
	if errors.Is(err, store.ErrConflict) { // another replica made it first
		g, err = st.GroupByName(ctx, AdminGroup)
	}
	return g, wrapBootstrap("create group "+AdminGroup, err)
}

func ensureAdminUser(ctx context.Context, st store.Store, groupID int64) (store.User, error) {
	u, err := st.UserByName(ctx, AdminUser)
	if errors.Is(err, store.ErrNotFound) {
		u = store.User{Username: AdminUser, FullName: "Administrator", GroupID: groupID, Active: true}
		err = st.CreateUser(ctx, &u)
		if errors.Is(err, store.ErrConflict) {
			u, err = st.UserByName(ctx, AdminUser)
		}
	}
	if err != nil {
		return u, wrapBootstrap("ensure user "+AdminUser, err)
	}
	if u.GroupID != groupID || !u.Active {
		u.GroupID, u.Active = groupID, true
		if err := st.UpdateUser(ctx, &u); err != nil {
			return u, wrapBootstrap("reactivate user "+AdminUser, err)
		}
	}
	return u, nil
}

func ensureAdminKey(ctx context.Context, st store.Store, userID int64, key string) error {
	sum := sha256.Sum256([]byte(key))
	for range 3 { // a replica racing this one may create or replace it
		c, err := st.CredentialByHash(ctx, sum[:])
		switch {
		case err == nil && c.Key.UserID != userID:
			return fmt.Errorf("accounts: ADMIN_API_KEY is stored as key %d of user %d, not of %s", c.Key.ID, c.Key.UserID, AdminUser)
		case err == nil && usableAdminKey(&c.Key, time.Now()):
			return nil
		case err == nil:
			// Revoked, expired or short of scopes: the environment says
			// this key is the admin's, so it is made again.
			if err := st.DeleteKey(ctx, c.Key.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return wrapBootstrap("replace the stored ADMIN_API_KEY", err)
			}
		case !errors.Is(err, store.ErrNotFound):
			return wrapBootstrap("look up ADMIN_API_KEY", err)
		}
		k := store.APIKey{UserID: userID, Name: adminKeyName, Prefix: key[:PrefixLen], Hash: sum[:],
			Scopes: adminScopes, Status: store.KeyActive}
		err = st.CreateKey(ctx, &k)
		if err == nil {
			return nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return wrapBootstrap("store ADMIN_API_KEY", err)
		}
	}
	return errors.New("accounts: store ADMIN_API_KEY: it kept changing under this replica")
}

func usableAdminKey(k *store.APIKey, now time.Time) bool {
	return k.Status == store.KeyActive && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt)) &&
		ParseScopes(k.Scopes) == auth.ScopeInference|auth.ScopeAdmin|auth.ScopeAudit
}

func wrapBootstrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("accounts: bootstrap admin: %s: %w", what, err)
}
