package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

// dialects opens handles on one fresh database per dialect: open(t) may be
// called several times for handles on the same database.
func dialects(t *testing.T) map[string]func(t *testing.T) *sqlstore.Store {
	path := filepath.Join(t.TempDir(), "m.db")
	maria := testsvc.StartMariaDB(t)
	return map[string]func(t *testing.T) *sqlstore.Store{
		sqlstore.SQLite: func(t *testing.T) *sqlstore.Store { return openSQLite(t, path) },
		sqlstore.MySQL:  func(t *testing.T) *sqlstore.Store { return openMySQL(t, maria.DSN) },
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var tables = []string{"admin_events", "api_keys", "backends", "console_sessions", "conversation_blob_refs", "conversation_item_sizes", "conversation_items", "conversations",
	"group_model_access", "nodes", "response_blob_refs", "response_blobs", "response_sizes", "schema_migrations", "stored_responses",
	"telemetry_backends", "telemetry_gpus", "user_groups", "user_model_access", "user_usage", "users"}

func TestMigrate_UpFromEmpty(t *testing.T) {
	for dialect, open := range dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			ctx := testCtx(t)
			s := open(t)
			latest, err := sqlstore.LatestVersion(dialect)
			if err != nil || latest < 1 {
				t.Fatalf("LatestVersion = %d, %v", latest, err)
			}
			if v, err := s.Version(ctx); err != nil || v != 0 {
				t.Fatalf("Version of an empty database = %d, %v; want 0", v, err)
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			if v, err := s.Version(ctx); err != nil || v != latest {
				t.Fatalf("Version = %d, %v; want %d", v, err, latest)
			}
			if got := tableNames(t, s); !slices.Equal(got, tables) {
				t.Errorf("tables = %v, want %v", got, tables)
			}
			var rows int
			if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&rows); err != nil || rows != latest {
				t.Errorf("schema_migrations has %d rows (%v), want %d", rows, err, latest)
			}
		})
	}
}

// Two processes starting at once both migrate (one waits for the other)
// and both seed: every migration is applied once, every group made once.
func TestMigrate_ConcurrentHandles(t *testing.T) {
	for dialect, open := range dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			ctx := testCtx(t)
			const n = 4
			stores := make([]*sqlstore.Store, n)
			for i := range stores {
				stores[i] = open(t)
			}
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i, s := range stores {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := s.Migrate(ctx); err != nil {
						errs[i] = fmt.Errorf("Migrate: %w", err)
						return
					}
					if err := s.SeedGroups(ctx); err != nil {
						errs[i] = fmt.Errorf("SeedGroups: %w", err)
					}
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			latest, _ := sqlstore.LatestVersion(dialect)
			var rows int
			if err := stores[0].DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&rows); err != nil || rows != latest {
				t.Errorf("schema_migrations has %d rows (%v), want %d", rows, err, latest)
			}
			gs, err := stores[1].Groups(ctx)
			if err != nil || len(gs) != len(sqlstore.DefaultGroups()) {
				t.Errorf("after concurrent seeding: %d groups (%v), want %d", len(gs), err, len(sqlstore.DefaultGroups()))
			}
		})
	}
}

// MySQL DDL is not transactional: a migration cut short is run again
// from its start, so every statement must be re-runnable.
func TestMigrate_RerunAfterInterruption(t *testing.T) {
	for dialect, open := range dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			ctx := testCtx(t)
			s := open(t)
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			if _, err := s.DB().ExecContext(ctx, "DELETE FROM schema_migrations"); err != nil {
				t.Fatal(err)
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate over a schema whose record was lost: %v", err)
			}
			latest, _ := sqlstore.LatestVersion(dialect)
			if v, err := s.Version(ctx); err != nil || v != latest {
				t.Fatalf("Version = %d, %v; want %d", v, err, latest)
			}
		})
	}
}

func TestMigrate_RefusesNewerSchema(t *testing.T) {
	for dialect, open := range dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			ctx := testCtx(t)
			s := open(t)
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			if _, err := s.DB().ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'x')"); err != nil {
				t.Fatal(err)
			}
			err := s.Migrate(ctx)
			if err == nil || !strings.Contains(err.Error(), "newer than this binary") {
				t.Fatalf("Migrate of a newer schema: %v, want a refusal", err)
			}
		})
	}
}

// The two dialects' migrations make the same tables with the same columns.
func TestMigrate_DialectsEquivalent(t *testing.T) {
	cols := map[string]map[string][]string{}
	for dialect, open := range dialects(t) {
		s := open(t)
		if err := s.Migrate(testCtx(t)); err != nil {
			t.Fatalf("%s: Migrate: %v", dialect, err)
		}
		cols[dialect] = columns(t, s)
	}
	if d := cmp.Diff(cols[sqlstore.SQLite], cols[sqlstore.MySQL]); d != "" {
		t.Errorf("schemas differ (-sqlite +mysql):\n%s", d)
	}
}

func TestOpen_Errors(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct{ driver, dsn, want string }{
		{"postgres", "x", "unknown driver"},
		{sqlstore.SQLite, "", "file path"},
		{sqlstore.SQLite, filepath.Join(t.TempDir(), "a?b.db"), "not allowed"},
		{sqlstore.MySQL, "not a dsn", "mysql dsn"},
		{sqlstore.MySQL, "root@tcp(127.0.0.1:1)/x", "connect to mysql"},
		{sqlstore.MySQL, "root@tcp(127.0.0.1:1)/", "names no database"},
	} {
		s, err := sqlstore.Open(ctx, tc.driver, tc.dsn)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q, %q) succeeded", tc.driver, tc.dsn)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q, %q) = %v, want an error mentioning %q", tc.driver, tc.dsn, err, tc.want)
		}
	}
}

// Each ":memory:" Open is its own database, and one handle's calls all
// see it (its one connection is never closed under it).
func TestOpen_MemoryDatabasesAreSeparate(t *testing.T) {
	ctx := testCtx(t)
	a, b := openSQLite(t, ":memory:"), openSQLite(t, ":memory:")
	if err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Version(ctx); err != nil || v != 0 {
		t.Fatalf("the second memory database has version %d (%v), want 0", v, err)
	}
	if v, err := a.Version(ctx); err != nil || v == 0 {
		t.Fatalf("the first memory database lost its schema: version %d, %v", v, err)
	}
}

func tableNames(t *testing.T, s *sqlstore.Store) []string {
	t.Helper()
	var names []string
	for name := range columns(t, s) {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// columns maps each table to its column names in order.
func columns(t *testing.T, s *sqlstore.Store) map[string][]string {
	t.Helper()
	ctx := testCtx(t)
	q := `SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid`
	if s.Dialect() == sqlstore.MySQL {
		q = `SELECT table_name, column_name FROM information_schema.columns
WHERE table_schema = DATABASE() ORDER BY table_name, ordinal_position`
	}
	rows, err := s.DB().QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		out[table] = append(out[table], col)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
