package sqlstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
	"github.com/mindrouter/mindrouter/core/store/storetest"
)

func openSQLite(t *testing.T, dsn string) *sqlstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := sqlstore.Open(ctx, sqlstore.SQLite, dsn)
	if err != nil {
		t.Fatalf("Open(sqlite, %s): %v", dsn, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestSQLiteFile(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		// A directory that does not exist yet: Open creates it.
		return openSQLite(t, filepath.Join(t.TempDir(), "sub", "dir", "mindrouter.db"))
	})
}

func TestSQLiteMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openSQLite(t, ":memory:") })
}
