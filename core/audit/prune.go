package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Retention is how long the embedded sink keeps what it holds; zero keeps
// it for ever. Content (the bodies and the images they name) usually goes
// long before the accounting record of a request does.
type Retention struct {
	Rows    time.Duration // a request's whole row
	Content time.Duration // its request and response bodies and blobs
}

// PruneResult says what one pass removed.
type PruneResult struct {
	Rows, Cleared, Blobs int64
}

// pruneBatch bounds one statement's work, so a first pass over a large
// file holds SQLite's write lock for moments at a time, never minutes,
// and the recorder's inserts interleave.
const pruneBatch = 2000

// PruneEmbedded applies r to the embedded sink at now: rows older than
// r.Rows are deleted, bodies older than r.Content are emptied (the row
// says content_truncated), and blobs whose latest reference is older than
// the content cut-off are deleted. Unfinished rows (started) are kept
// whatever their age: they end as interrupted at the next start.
func PruneEmbedded(ctx context.Context, db *sql.DB, now time.Time, r Retention) (PruneResult, error) {
	var res PruneResult
	loop := func(what string, q string, cut time.Time, n *int64) error {
		c := cut.UTC().Format(sqliteTimeLayout)
		for {
			out, err := db.ExecContext(ctx, q, c, pruneBatch)
			if err != nil {
				return fmt.Errorf("audit: prune %s: %w", what, err)
			}
			k, _ := out.RowsAffected()
			*n += k
			if k < pruneBatch {
				return nil
			}
		}
	}
	if r.Rows > 0 {
		if err := loop("rows", `DELETE FROM request_rows WHERE rowid IN
 (SELECT rowid FROM request_rows WHERE "time" < ? AND "state" != 'started' LIMIT ?)`, now.Add(-r.Rows), &res.Rows); err != nil {
			return res, err
		}
	}
	content := r.Content
	if r.Rows > 0 && (content == 0 || content > r.Rows) {
		content = r.Rows // a deleted row's blobs go with it
	}
	if content > 0 {
		if err := loop("content", `UPDATE request_rows SET request_body = '', response_body = '', content_truncated = 1 WHERE rowid IN
 (SELECT rowid FROM request_rows WHERE "time" < ? AND (request_body != '' OR response_body != '') LIMIT ?)`, now.Add(-content), &res.Cleared); err != nil {
			return res, err
		}
		if err := loop("blobs", `DELETE FROM blobs WHERE rowid IN (SELECT rowid FROM blobs WHERE "time" < ? LIMIT ?)`,
			now.Add(-content), &res.Blobs); err != nil {
			return res, err
		}
	}
	return res, nil
}

// ErrTTLUnsupported: the ClickHouse server predates TTLs (19.6); its
// retention is by dropping monthly partitions (docs/audit.md).
var ErrTTLUnsupported = errors.New("audit: this ClickHouse has no TTLs (before 19.6): drop old partitions instead (docs/audit.md, Retention)")

// ApplyRetentionClickHouse sets the requests table's TTLs from r: the
// row TTL (r.Rows) and a TTL on the two body columns (r.Content), which
// ClickHouse applies at its merges. Each is changed only when it differs
// from what the table has (a MODIFY TTL rewrites the table's parts once),
// and removed when r turns it off. Blobs get no TTL: the writer stores a
// hash once, under its first request's time, so a TTL would drop images
// newer rows still name; docs/audit.md gives the query that deletes the
// blobs no kept row refers to.
func ApplyRetentionClickHouse(ctx context.Context, conn driver.Conn, database string, r Retention) error {
	if !validDatabase.MatchString(database) {
		return fmt.Errorf("audit: clickhouse database name %q: letters, digits and _ only", database)
	}
	var version, create string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		return fmt.Errorf("audit: clickhouse version: %w", err)
	}
	if !hasTTL(version) {
		if r == (Retention{}) {
			return nil
		}
		return ErrTTLUnsupported
	}
	if err := conn.QueryRow(ctx, "SELECT create_table_query FROM system.tables WHERE database = ? AND name = 'requests'", database).Scan(&create); err != nil {
		return fmt.Errorf("audit: read %s.requests' definition: %w", database, err)
	}
	for _, stmt := range retentionStatements(database+".requests", create, r) {
		if err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("audit: %s: %w", stmt, err)
		}
	}
	return nil
}

// retentionStatements are the ALTERs that bring a requests table whose
// create_table_query is create to r (none when it is there already).
func retentionStatements(table, create string, r Retention) []string {
	ttl := func(d time.Duration) string {
		return fmt.Sprintf("toDateTime(time) + toIntervalSecond(%d)", int64(d/time.Second))
	}
	secs := func(d time.Duration) string { return fmt.Sprintf("toIntervalSecond(%d)", int64(d/time.Second)) }
	var out []string
	switch cur := tableTTLClause(create); {
	case r.Rows > 0 && !strings.Contains(cur, secs(r.Rows)):
		out = append(out, "ALTER TABLE "+table+" MODIFY TTL "+ttl(r.Rows))
	case r.Rows == 0 && cur != "":
		out = append(out, "ALTER TABLE "+table+" REMOVE TTL")
	}
	for _, col := range []string{"request_body", "response_body"} {
		switch cur := columnTTL(create, col); {
		case r.Content > 0 && !strings.Contains(cur, secs(r.Content)):
			out = append(out, "ALTER TABLE "+table+" MODIFY COLUMN "+col+" String TTL "+ttl(r.Content))
		case r.Content == 0 && cur != "":
			out = append(out, "ALTER TABLE "+table+" MODIFY COLUMN "+col+" REMOVE TTL")
		}
	}
	return out
}

// hasTTL reports a server with TTLs (19.6 and later).
func hasTTL(version string) bool {
	major, rest, _ := strings.Cut(version, ".")
	minor, _, _ := strings.Cut(rest, ".")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil {
		return true // an unknown format is a newer server
	}
	return ma > 19 || ma == 19 && mi >= 6
}

// tableTTLClause is the table-level TTL of a create_table_query ("" if
// none): the text after " TTL " that follows the ORDER BY.
func tableTTLClause(create string) string {
	i := strings.Index(create, "ORDER BY")
	if i < 0 {
		return ""
	}
	rest := create[i:]
	j := strings.Index(rest, " TTL ")
	if j < 0 {
		return ""
	}
	rest = rest[j+5:]
	if k := strings.Index(rest, " SETTINGS "); k >= 0 {
		rest = rest[:k]
	}
	return rest
}

// columnTTL is a column's TTL expression in a create_table_query ("" if
// none).
func columnTTL(create, col string) string {
	i := strings.Index(create, "`"+col+"` ")
	if i < 0 {
		i = strings.Index(create, col+" String")
	}
	if i < 0 {
		return ""
	}
	def := create[i:]
	depth := 0
	for k, c := range def { // the column's definition ends at a comma or parenthesis of its own level
		if c == '(' {
			depth++
		} else if c == ')' && depth > 0 {
			depth--
		} else if (c == ',' || c == ')') && depth == 0 {
			def = def[:k]
			break
		}
	}
	if j := strings.Index(def, " TTL "); j >= 0 {
		return def[j+5:]
	}
	return ""
}
