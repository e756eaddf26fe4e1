package audit

import (
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// viewsSQL is deploy/clickhouse/views.sql (a test checks the copies are
// identical): the analysts' views over the requests table.
//
//go:embed query_views.sql
var viewsSQL string

var (
	createView = regexp.MustCompile(`(?m)^CREATE VIEW IF NOT EXISTS ([A-Za-z_][A-Za-z0-9_]*) AS`)
	fromTable  = regexp.MustCompile(`\bFROM requests\b`)
)

// ViewNames are the views ApplyViews creates, in file order.
func ViewNames() []string {
	var out []string
	for _, m := range createView.FindAllStringSubmatch(viewsSQL, -1) {
		out = append(out, m[1])
	}
	return out
}

// ApplyViews creates the analysts' views (deploy/clickhouse/views.sql) in
// database, next to its requests table; views that exist are left as they
// are (drop one to have it re-created). Safe to run from several gateways
// at once.
func ApplyViews(ctx context.Context, conn driver.Conn, database string) error {
	if !validDatabase.MatchString(database) {
		return fmt.Errorf("audit: clickhouse database name %q: letters, digits and _ only", database)
	}
	for _, stmt := range viewStatements(database) {
		if err := conn.Exec(ctx, stmt); err != nil {
			name := ""
			if m := createView.FindStringSubmatch(stmt); m != nil {
				name = m[1]
			}
			return fmt.Errorf("audit: create view %s.%s: %w", database, name, err)
		}
	}
	return nil
}

// viewStatements splits views.sql into its statements, without comment
// lines, with every name qualified by database: the file names the table
// and its views unqualified so that it also runs by hand with
// clickhouse-client --database.
func viewStatements(database string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.SplitSeq(viewsSQL, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			s := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";")
			s = createView.ReplaceAllString(s, "CREATE VIEW IF NOT EXISTS "+database+".$1 AS")
			s = fromTable.ReplaceAllString(s, "FROM "+database+".requests")
			out = append(out, s)
			cur.Reset()
		}
	}
	return out
}
