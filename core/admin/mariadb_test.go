package admin

import (
	"context"
	"os"
	"testing"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testsvc.StopAll()
	os.Exit(code)
}

// TestMariaDB runs the tests that lean most on the store (conflicts,
// cascades, concurrent key creation, paging) against a real MariaDB.
func TestMariaDB(t *testing.T) {
	cases := []struct {
		name string
		fn   func(*testing.T, *env)
		opts envOpts
	}{
		{"users", usersCRUD, envOpts{}},
		{"user errors", usersErrors, envOpts{}},
		{"keys", keysLifecycle, envOpts{}},
		{"max keys", keysMax, envOpts{}},
		{"me", meKeys, envOpts{}},
		{"groups", groupsCRUD, envOpts{}},
		{"backends", backendsLifecycle, envOpts{}},
		{"backend errors", backendsErrors, envOpts{}},
		{"quota store row", quotaStoreRow, envOpts{noQuotas: true}},
		{"audit", auditLog, envOpts{}},
		{"user import", importUsers, envOpts{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newEnvStore(t, openMariaDB(t), tc.opts))
		})
	}
}

func openMariaDB(t *testing.T) store.Store {
	t.Helper()
	db := testsvc.StartMariaDB(t)
	st, err := sqlstore.Open(context.Background(), "mysql", db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
