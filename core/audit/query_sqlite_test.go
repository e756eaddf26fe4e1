package audit

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docQueries are the SQLite queries of docs/audit.md: its sql blocks that
// start with a "-- name:" line.
func docQueries(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/audit.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```sql\n-- name: (\\w+)\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// runSQLite runs script (statements ending in ";" at a line end) on a
// connection of its own to the sink file, with data/mindrouter.db read as
// accounts, and returns the last statement's rows.
func runSQLite(t *testing.T, sinkPath, accountsPath, script string) []row {
	t.Helper()
	db, err := sql.Open("sqlite", sinkPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // ATTACH is per connection
	script = strings.ReplaceAll(script, "'data/mindrouter.db'", "'"+accountsPath+"'")
	var stmts []string
	var cur strings.Builder
	for _, line := range strings.Split(script, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		cur.WriteString(line + "\n")
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			stmts = append(stmts, cur.String())
			cur.Reset()
		}
	}
	ctx := context.Background()
	for _, s := range stmts[:len(stmts)-1] {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
	}
	rows, err := db.QueryContext(ctx, stmts[len(stmts)-1])
	if err != nil {
		t.Fatalf("%v\n%s", err, stmts[len(stmts)-1])
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []row
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		r := row{}
		for i, c := range cols {
			switch v := vals[i].(type) {
			case int64:
				r[c] = float64(v)
			case float64:
				r[c] = v
			case string:
				r[c] = v
			case []byte:
				r[c] = string(v)
			case nil:
				r[c] = nil
			default:
				t.Fatalf("column %s: %T", c, v)
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGuideSQLiteQueriesAnswer(t *testing.T) {
	evs := genEvents(3000, 5)
	dir := t.TempDir()
	sink := filepath.Join(dir, "audit.db")
	db, err := OpenEmbedded(sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := newSQLiteSink(db, false).write(context.Background(), evs, false); err != nil {
		t.Fatal(err)
	}
	db.Close()
	accounts := filepath.Join(dir, "mindrouter.db")
	limits := map[string][2]float64{"faculty": {0, 2}, "staff": {500000, 1}, "students": {100000, 1}} // budget, weight
	adb, err := sql.Open("sqlite", accounts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adb.Exec(`CREATE TABLE user_groups (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, token_budget INTEGER NOT NULL, weight REAL NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for g, l := range limits {
		if _, err := adb.Exec(`INSERT INTO user_groups (name, token_budget, weight) VALUES (?, ?, ?)`, g, int64(l[0]), l[1]); err != nil {
			t.Fatal(err)
		}
	}
	adb.Close()

	qs := docQueries(t)
	run := func(name string) []row {
		t.Helper()
		q, ok := qs[name]
		if !ok {
			t.Fatalf("docs/audit.md has no SQLite query %s", name)
		}
		return runSQLite(t, sink, accounts, q)
	}

	want := map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return e.User + "|" + e.Group }, nil) {
		want[k] = map[string]figure{"requests": ex(a.n), "failed": ex(a.failed), "tokens": ex(a.tokens)}
	}
	expectRows(t, "usage_per_user", run("usage_per_user"), []string{"user", "group"}, want)

	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return day(e) + "|" + e.Model }, nil) {
		want[k] = map[string]figure{"requests": ex(a.n), "tokens": ex(a.tokens)}
	}
	expectRows(t, "usage_per_model_day", run("usage_per_model_day"), []string{"day", "model"}, want)

	want = map[string]map[string]figure{}
	for g, a := range group(evs, func(e *Event) string { return e.Group }, nil) {
		mx := 0.0
		for _, v := range a.users {
			mx = max(mx, v)
		}
		f := 0.0
		if b := limits[g][0]; b > 0 {
			f = mx / b
		}
		want[g] = map[string]figure{"users": ex(float64(len(a.users))), "tokens": ex(a.tokens), "max_user_tokens": ex(mx),
			"token_budget": ex(limits[g][0]), "max_user_fraction": approx(f)}
	}
	expectRows(t, "group_budget", run("group_budget"), []string{"group"}, want)

	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return e.Backend + "|" + e.Model }, func(e *Event) bool { return e.Status < 400 }) {
		want[k] = map[string]figure{"requests": ex(a.n), "p50_ms": quant(0.5, a.total), "p95_ms": quant(0.95, a.total), "p99_ms": quant(0.99, a.total)}
	}
	expectRows(t, "latency_per_backend_model", run("latency_per_backend_model"), []string{"backend", "model"}, want)

	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return e.Kind }, nil) {
		want[k] = map[string]figure{"requests": ex(a.n), "auth_us": approx(a.sums[0] / a.n), "queue_us": approx(a.sums[5] / a.n), "overhead_us": approx(a.sums[9] / a.n)}
	}
	expectRows(t, "gateway_overhead", run("gateway_overhead"), []string{"kind"}, want)

	dayTokens, dayWeight := map[string]float64{}, map[string]float64{}
	for k, a := range group(evs, day, nil) {
		dayTokens[k] = a.okTokens
	}
	byDG := group(evs, func(e *Event) string { return day(e) + "|" + e.Group }, nil)
	for k := range byDG {
		d, g, _ := strings.Cut(k, "|")
		dayWeight[d] += limits[g][1]
	}
	want = map[string]map[string]figure{}
	for k, a := range byDG {
		d, g, _ := strings.Cut(k, "|")
		want[k] = map[string]figure{"token_share": approx(a.okTokens / dayTokens[d]), "entitled_share": approx(limits[g][1] / dayWeight[d]),
			"queue_avg_ms": approx(a.sums[5] / a.n / 1000)}
	}
	expectRows(t, "fairness", run("fairness"), []string{"day", "group"}, want)

	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return e.Model }, nil) {
		want[k] = map[string]figure{"requests": ex(a.n), "errors": ex(a.failed), "error_rate": approx(a.failed / a.n),
			"rate_limited": ex(a.r429), "server_errors": ex(a.r5xx)}
	}
	expectRows(t, "error_rates", run("error_rates"), []string{"model"}, want)

	byUser := group(evs, func(e *Event) string { return e.User }, nil)
	users := make([]string, 0, len(byUser))
	for u := range byUser {
		users = append(users, u)
	}
	slices.SortFunc(users, func(a, b string) int {
		if c := -cmpFloat(byUser[a].tokens, byUser[b].tokens); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	top := run("top_users")
	if len(top) != 5 {
		t.Fatalf("top_users: %d rows, want 5", len(top))
	}
	for i, r := range top {
		if r["user"] != users[i] || r["tokens"] != byUser[users[i]].tokens {
			t.Errorf("top_users[%d] = %v, want %s with %g tokens", i, r, users[i], byUser[users[i]].tokens)
		}
	}

	want = map[string]map[string]figure{}
	for u, a := range byUser {
		want[u] = map[string]figure{"joules": approx(a.joules), "measured": ex(a.measured), "requests": ex(a.n)}
	}
	expectRows(t, "energy_per_user", run("energy_per_user"), []string{"user"}, want)

	if one := run("one_request"); len(one) != 1 || one[0]["request_id"] != "req-000042" {
		t.Errorf("one_request: %v", one)
	}
	var names []string
	for n := range qs {
		names = append(names, n)
	}
	slices.Sort(names)
	if got := fmt.Sprint(names); got != "[energy_per_user error_rates fairness gateway_overhead group_budget latency_per_backend_model one_request top_users usage_per_model_day usage_per_user]" {
		t.Errorf("docs/audit.md's SQLite queries are %s: check the new ones here", got)
	}
}
