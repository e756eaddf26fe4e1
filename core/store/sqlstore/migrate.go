package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/mindrouter/mindrouter/core/store"
)

//go:embed migrations
var migrationFS embed.FS

// migration is one numbered file of statements.
type migration struct {
	version int
	name    string
	stmts   []string
}

// migrations lists a dialect's migrations in version order.
func migrations(dialect string) ([]migration, error) {
	dir := path.Join("migrations", dialect)
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s/%s: name must be NNNN_what.sql", dir, name)
		}
		body, err := fs.ReadFile(migrationFS, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		ms = append(ms, migration{version: v, name: name, stmts: splitStatements(string(body))})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := range ms {
		if ms[i].version != i+1 {
			return nil, fmt.Errorf("migrations %s: version %d missing", dir, i+1)
		}
	}
	return ms, nil
}

// splitStatements drops "--" comment lines and splits at lines ending in
// ";". The migrations are ours: no ";" ends a line inside a literal.
func splitStatements(sqlText string) []string {
	var (
		stmts []string
		cur   strings.Builder
	)
	for _, line := range strings.Split(sqlText, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			stmts = append(stmts, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if rest := strings.TrimSpace(cur.String()); rest != "" {
		stmts = append(stmts, rest)
	}
	return stmts
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER     NOT NULL PRIMARY KEY,
  name       VARCHAR(190) NOT NULL,
  applied_at VARCHAR(32) NOT NULL
)`

// Migrate applies the migrations the database lacks, each recorded in
// schema_migrations. Concurrent migrators (other processes) wait for one
// another: MySQL through GET_LOCK on a name per database, SQLite through
// one IMMEDIATE transaction around the whole run (SQLite DDL is
// transactional, MySQL's is not, so there each migration is written to
// be re-runnable).
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrations(s.dialect)
	if err != nil {
		return err
	}
	if s.dialect == MySQL {
		return s.migrateMySQL(ctx, ms)
	}
	return s.inTx(ctx, func(tx *sql.Tx) error { return applyMigrations(ctx, tx, ms) })
}

const migrateLock = "CONCAT('mindrouter_migrate:', MD5(DATABASE()))"

func (s *Store) migrateMySQL(ctx context.Context, ms []migration) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: get connection: %w", err)
	}
	defer conn.Close()
	// GET_LOCK names are server-wide; the database's name (hashed: a
	// lock name has at most 64 characters) keeps two databases on one
	// server from waiting for each other.
	var got sql.NullInt64
	err = conn.QueryRowContext(ctx, "SELECT GET_LOCK("+migrateLock+", 120)").Scan(&got)
	if err != nil {
		return fmt.Errorf("migrate: take the migration lock: %w", err)
	}
	if !got.Valid || got.Int64 != 1 {
		return errors.New("migrate: another process held the migration lock for 120s")
	}
	defer func() {
		// A fresh context: the caller's may be done, and the lock must go.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK("+migrateLock+")")
	}()
	return applyMigrations(ctx, conn, ms)
}

// applyMigrations runs on a connection or transaction that excludes other
// migrators.
func applyMigrations(ctx context.Context, q querier, ms []migration) error {
	if _, err := q.ExecContext(ctx, createMigrationsTable); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	var cur int
	if err := q.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&cur); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if cur > len(ms) {
		return fmt.Errorf("migrate: database schema version %d is newer than this binary's %d", cur, len(ms))
	}
	for _, m := range ms[cur:] {
		for i, stmt := range m.stmts {
			if _, err := q.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrate: %s statement %d: %w", m.name, i+1, err)
			}
		}
		if _, err := q.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
			m.version, m.name, tv(now())); err != nil {
			return fmt.Errorf("migrate: record %s: %w", m.name, err)
		}
	}
	return nil
}

// Version is the highest migration applied; 0 for an empty database.
func (s *Store) Version(ctx context.Context) (int, error) {
	var q string
	if s.dialect == MySQL {
		q = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'schema_migrations'"
	} else {
		q = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
	}
	var n int
	if err := s.db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, fmt.Errorf("schema version: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	var v int
	if err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&v); err != nil {
		return 0, fmt.Errorf("schema version: %w", err)
	}
	return v, nil
}

// LatestVersion is the schema version Migrate brings a database to.
func LatestVersion(dialect string) (int, error) {
	ms, err := migrations(dialect)
	return len(ms), err
}

// DefaultGroups are the groups SeedGroups creates (a fresh slice each call).
func DefaultGroups() []store.Group {
	return []store.Group{
		{Name: "students", Description: "Students", TokenBudget: 100_000, BudgetPeriodDays: 30, RPM: 30, MaxConcurrent: 2, Weight: 1, KeyExpiryDays: 90, MaxKeys: 16},
		{Name: "staff", Description: "Staff", TokenBudget: 500_000, BudgetPeriodDays: 30, RPM: 60, MaxConcurrent: 4, Weight: 2, KeyExpiryDays: 90, MaxKeys: 16},
		{Name: "faculty", Description: "Faculty", TokenBudget: 1_000_000, BudgetPeriodDays: 30, RPM: 60, MaxConcurrent: 4, Weight: 3, KeyExpiryDays: 90, MaxKeys: 16},
		{Name: "researchers", Description: "Researchers", TokenBudget: 5_000_000, BudgetPeriodDays: 30, RPM: 120, MaxConcurrent: 8, Weight: 4, KeyExpiryDays: 90, MaxKeys: 16},
		{Name: "admin", Description: "Administrators", BudgetPeriodDays: 30, Weight: 4, IsAdmin: true},
		{Name: "auditor", Description: "Auditors (read-only admin)", TokenBudget: 100_000, BudgetPeriodDays: 30, RPM: 30, MaxConcurrent: 2, Weight: 1, IsAuditor: true, KeyExpiryDays: 90, MaxKeys: 4},
	}
}

// SeedGroups creates the default groups (DefaultGroups) when no group
// exists. Two processes seeding at once both succeed: a name another has
// just created is skipped.
func (s *Store) SeedGroups(ctx context.Context) error {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM user_groups").Scan(&n); err != nil {
		return fmt.Errorf("seed groups: count groups: %w", err)
	}
	if n > 0 {
		return nil
	}
	for _, g := range DefaultGroups() {
		if err := s.CreateGroup(ctx, &g); err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("seed groups: %w", err)
		}
	}
	return nil
}

// Pending is a migration Migrate would apply, with its statements.
type Pending struct {
	Version    int
	Name       string
	Statements []string
}

// Pending lists, without applying anything, the migrations the database
// lacks (mindrouter migrate --dry-run): what an upgrade will run, to read
// before a rolling upgrade. It errs like Migrate when the database is
// newer than this binary.
func (s *Store) Pending(ctx context.Context) ([]Pending, error) {
	ms, err := migrations(s.dialect)
	if err != nil {
		return nil, err
	}
	cur, err := s.Version(ctx)
	if err != nil {
		return nil, err
	}
	if cur > len(ms) {
		return nil, fmt.Errorf("migrate: database schema version %d is newer than this binary's %d", cur, len(ms))
	}
	var ps []Pending
	for _, m := range ms[cur:] {
		ps = append(ps, Pending{Version: m.version, Name: m.name, Statements: m.stmts})
	}
	return ps, nil
}
