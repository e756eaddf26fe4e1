package sqlstore_test

import (
	"context"
	"os"
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

// A file: URI (config passes one through) works like a path: the
// directory is created, the store is a file others can open.
func TestSQLiteFileURI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "uri dir")
	path := filepath.Join(dir, "m.db")
	ctx := context.Background()
	s := openSQLite(t, "file:"+path+"?cache=private")
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	g := store.Group{Name: "g"}
	if err := s.CreateGroup(ctx, &g); err != nil {
		t.Fatal(err)
	}
	other := openSQLite(t, path)
	if _, err := other.GroupByName(ctx, "g"); err != nil {
		t.Fatalf("the file behind the URI: %v", err)
	}
	if _, err := os.Stat("file:"); err == nil {
		t.Error("a directory named after the URI scheme was created in the working directory")
	}
	var mode string
	if err := s.DB().QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q (%v) through a URI, want wal", mode, err)
	}
	var fk int
	if err := s.DB().QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d (%v) through a URI, want 1", fk, err)
	}
	mem := openSQLite(t, "file::memory:")
	if err := mem.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 { // every call sees the one memory database
		if v, err := mem.Version(ctx); err != nil || v == 0 {
			t.Fatalf("memory URI database: version %d, %v", v, err)
		}
	}
}
