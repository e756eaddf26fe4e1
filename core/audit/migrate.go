package audit

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// schemaFS holds the ClickHouse migrations, applied in name order.
// deploy/clickhouse/schema/ holds byte-identical copies (a test checks).
//
//go:embed schema/*.sql
var schemaFS embed.FS

// validDatabase is what MigrateClickHouse accepts as a database name: it
// is spliced into DDL, so nothing that would need quoting.
var validDatabase = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// MigrateClickHouse creates the audit tables in database (creating the
// database too) and records each applied migration in
// database.schema_migrations. It is idempotent: running it again, from
// any number of gateways, changes nothing.
func MigrateClickHouse(ctx context.Context, conn driver.Conn, database string) error {
	if !validDatabase.MatchString(database) {
		return fmt.Errorf("audit: clickhouse database name %q: letters, digits and _ only", database)
	}
	var version string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		return fmt.Errorf("audit: clickhouse version: %w", err)
	}
	dt64 := hasDateTime64(version)
	if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+database); err != nil {
		return fmt.Errorf("audit: create clickhouse database %s: %w", database, err)
	}
	if err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+database+
		".schema_migrations (name String, applied DateTime DEFAULT now()) ENGINE = MergeTree() ORDER BY name"); err != nil {
		return fmt.Errorf("audit: create %s.schema_migrations: %w", database, err)
	}
	applied := map[string]bool{}
	rows, err := conn.Query(ctx, "SELECT name FROM "+database+".schema_migrations")
	if err != nil {
		return fmt.Errorf("audit: read %s.schema_migrations: %w", database, err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("audit: read %s.schema_migrations: %w", database, err)
		}
		applied[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("audit: read %s.schema_migrations: %w", database, err)
	}
	names, err := fs.Glob(schemaFS, "schema/*.sql")
	if err != nil {
		return fmt.Errorf("audit: list migrations: %w", err)
	}
	sort.Strings(names)
	for _, path := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(path, "schema/"), ".sql")
		if applied[name] {
			continue
		}
		b, err := schemaFS.ReadFile(path)
		if err != nil {
			return fmt.Errorf("audit: read migration %s: %w", name, err)
		}
		for _, stmt := range statements(string(b), database, dt64) {
			if err := execDDL(ctx, conn, database, stmt); err != nil {
				return fmt.Errorf("audit: migration %s: %w", name, err)
			}
		}
		// Every statement is IF NOT EXISTS, so two gateways racing here
		// at most record the name twice, which reading tolerates.
		if err := conn.Exec(ctx, "INSERT INTO "+database+".schema_migrations (name) SELECT '"+name+"'"); err != nil {
			return fmt.Errorf("audit: record migration %s: %w", name, err)
		}
	}
	return nil
}

// addColumn matches a migration's ALTER TABLE … ADD COLUMN IF NOT
// EXISTS: table, then column.
var addColumn = regexp.MustCompile(`^ALTER TABLE [A-Za-z0-9_]+\.([A-Za-z0-9_]+) ADD COLUMN IF NOT EXISTS ([A-Za-z0-9_]+) `)

// execDDL runs one migration statement. ClickHouse before 19.x (Debian's
// 18.16) has no ADD COLUMN IF NOT EXISTS, so such a statement runs
// without it when system.columns lacks the column, and a failure is one
// only if the column is still missing then (another gateway may have
// added it in between).
func execDDL(ctx context.Context, conn driver.Conn, database, stmt string) error {
	m := addColumn.FindStringSubmatch(stmt)
	if m == nil {
		return conn.Exec(ctx, stmt)
	}
	has := func() (bool, error) {
		var n uint64
		err := conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?",
			database, m[1], m[2]).Scan(&n)
		return n > 0, err
	}
	if ok, err := has(); err != nil || ok {
		return err
	}
	err := conn.Exec(ctx, strings.Replace(stmt, " ADD COLUMN IF NOT EXISTS ", " ADD COLUMN ", 1))
	if err == nil {
		return nil
	}
	if ok, herr := has(); herr == nil && ok {
		return nil
	}
	return err
}

// statements splits a migration file into its statements (ending in ';'
// at the end of a line), without comment lines, for database; servers
// without DateTime64 get DateTime.
func statements(sql, database string, dateTime64 bool) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.SplitSeq(sql, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	for i, s := range out {
		s = strings.ReplaceAll(s, "DATABASE IF NOT EXISTS mindrouter", "DATABASE IF NOT EXISTS "+database)
		s = strings.ReplaceAll(s, "mindrouter.", database+".")
		if !dateTime64 {
			s = strings.ReplaceAll(s, "DateTime64(6, 'UTC')", "DateTime('UTC')")
		}
		out[i] = s
	}
	return out
}

// hasDateTime64 reports whether a server of this version (as version()
// gives it, "18.16.1", "24.3.2.23") has DateTime64: from 20.1.
func hasDateTime64(version string) bool {
	major, rest, _ := strings.Cut(version, ".")
	minor, _, _ := strings.Cut(rest, ".")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	if err := errors.Join(err1, err2); err != nil {
		return true // an unknown format is a newer server
	}
	return ma > 20 || ma == 20 && mi >= 1
}
