package audit

import (
	"context"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

func TestViewsCopyIsIdentical(t *testing.T) {
	deployed, err := os.ReadFile("../../deploy/clickhouse/views.sql")
	if err != nil {
		t.Fatal(err)
	}
	if string(deployed) != viewsSQL {
		t.Fatal("core/audit/query_views.sql differs from deploy/clickhouse/views.sql: copy one onto the other")
	}
	if got := ViewNames(); len(got) != 8 {
		t.Fatalf("ViewNames() = %v, want the 8 views", got)
	}
}

// row is one result row, normalised: numbers as float64, dates as
// "2006-01-02", arrays of numbers as []float64.
type row map[string]any

// query runs sql and returns its rows, whatever the column types.
func query(t *testing.T, conn driver.Conn, sql string) []row {
	t.Helper()
	rows, err := conn.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	defer rows.Close()
	types := rows.ColumnTypes()
	var out []row
	for rows.Next() {
		dest := make([]any, len(types))
		for i, ct := range types {
			dest[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
		r := row{}
		for i, ct := range types {
			r[ct.Name()] = normal(reflect.ValueOf(dest[i]).Elem())
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func normal(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint())
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.String:
		return v.String()
	case reflect.Slice:
		out := make([]float64, v.Len())
		for i := range out {
			out[i] = normal(v.Index(i)).(float64)
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return normal(v.Elem())
	}
	if t, ok := v.Interface().(time.Time); ok {
		return t.UTC().Format(time.DateOnly)
	}
	panic(fmt.Sprintf("audit test: column of type %s", v.Type()))
}

// figure is an expected value: exact, within a relative tolerance, or a
// quantile of a sample.
type figure struct {
	exact  float64
	tol    bool      // compare within 1e-9 relative
	sample []float64 // the value is a quantile q of sample
	q      float64
}

func ex(v float64) figure                 { return figure{exact: v} }
func approx(v float64) figure             { return figure{exact: v, tol: true} }
func quant(q float64, s []float64) figure { return figure{q: q, sample: s} }
func (f figure) check(got float64) (bool, string) {
	if f.sample != nil {
		s := slices.Clone(f.sample)
		slices.Sort(s)
		pos := f.q * float64(len(s)-1)
		// ClickHouse's quantile interpolates between the neighbouring
		// ranks; allow one rank more either side.
		lo := s[max(int(math.Floor(pos))-1, 0)]
		hi := s[min(int(math.Ceil(pos))+1, len(s)-1)]
		return got >= lo-1e-9 && got <= hi+1e-9, fmt.Sprintf("quantile %.2f of %d values, in [%g, %g]", f.q, len(s), lo, hi)
	}
	if f.tol {
		return math.Abs(got-f.exact) <= 1e-9*math.Max(1, math.Abs(f.exact)), fmt.Sprintf("%g", f.exact)
	}
	return got == f.exact, fmt.Sprintf("%g", f.exact)
}

// expectRows compares got (keyed by the key columns) with want.
func expectRows(t *testing.T, name string, got []row, keys []string, want map[string]map[string]figure) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d", name, len(got), len(want))
	}
	for _, r := range got {
		var k []string
		for _, c := range keys {
			k = append(k, fmt.Sprint(r[c]))
		}
		key := strings.Join(k, "|")
		w, ok := want[key]
		if !ok {
			t.Errorf("%s: unexpected row %s", name, key)
			continue
		}
		for col, f := range w {
			v, ok := r[col].(float64)
			if !ok {
				t.Errorf("%s %s: column %s is %#v", name, key, col, r[col])
				continue
			}
			if good, desc := f.check(v); !good {
				t.Errorf("%s %s: %s = %g, want %s", name, key, col, v, desc)
			}
		}
	}
}

// agg groups evs by key and lets fill accumulate each group's figures.
type agg struct {
	n, completed, failed, estimated, measured, gone, r429, r4xx, r5xx float64
	prompt, completion, reasoning, tokens, okTokens, measuredTokens   float64
	joules                                                            float64
	total, ttft, queue, overhead, fairness                            []float64
	sums                                                              [11]float64 // stage sums
	users                                                             map[string]float64
}

func group(evs []Event, key func(e *Event) string, filter func(e *Event) bool) map[string]*agg {
	out := map[string]*agg{}
	for i := range evs {
		e := &evs[i]
		if filter != nil && !filter(e) {
			continue
		}
		k := key(e)
		a := out[k]
		if a == nil {
			a = &agg{users: map[string]float64{}}
			out[k] = a
		}
		tok := float64(e.PromptTokens) + float64(e.CompletionTokens)
		a.n++
		if e.Status < 400 {
			a.completed++
			a.okTokens += tok
			a.total = append(a.total, float64(e.TotalUs)/1000)
			if e.Stream {
				a.ttft = append(a.ttft, float64(e.TTFTUs)/1000)
			}
		} else {
			a.failed++
		}
		switch {
		case e.Status == 429:
			a.r429++
		}
		if e.Status >= 400 && e.Status < 500 {
			a.r4xx++
		}
		if e.Status >= 500 {
			a.r5xx++
		}
		if e.TokensEstimated {
			a.estimated++
		}
		if e.ClientGone {
			a.gone++
		}
		if e.EnergyJ > 0 {
			a.measured++
			a.measuredTokens += tok
		}
		a.prompt += float64(e.PromptTokens)
		a.completion += float64(e.CompletionTokens)
		a.reasoning += float64(e.ReasoningTokens)
		a.tokens += tok
		a.joules += e.EnergyJ
		a.queue = append(a.queue, float64(e.QueueUs)/1000)
		a.fairness = append(a.fairness, float64(e.FairnessDelayUs)/1000)
		over := float64(int64(e.TotalUs) - int64(e.QueueUs) - int64(e.BackendUs))
		a.overhead = append(a.overhead, over)
		for j, v := range [...]uint32{e.AuthUs, e.LimitUs, e.ReadUs, e.CheckUs, e.DecodeUs, e.QueueUs, e.EncodeUs, e.BackendUs, e.RespondUs} {
			a.sums[j] += float64(v)
		}
		a.sums[9] += over
		a.users[e.User] += tok
	}
	return out
}

func day(e *Event) string   { return e.Time.UTC().Format(time.DateOnly) }
func month(e *Event) string { return e.Time.UTC().Format("2006-01") + "-01" }

func divide(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] / b[i]
	}
	return out
}

func TestViewsAnswer(t *testing.T) {
	evs := genEvents(4000, 3)
	conn, db := clickhouseWith(t, evs)
	insertClickHouse(t, conn, db, evs[:300]) // a replayed batch: FINAL hides it
	ctx := context.Background()
	for range 2 { // idempotent
		if err := ApplyViews(ctx, conn, db); err != nil {
			t.Fatal(err)
		}
	}
	if err := ApplyViews(ctx, conn, "bad name"); err == nil {
		t.Error("ApplyViews took a database name that needs quoting")
	}

	want := map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return strings.Join([]string{day(e), e.User, e.Group, e.Model}, "|") }, nil) {
		want[k] = map[string]figure{
			"requests": ex(a.n), "completed": ex(a.completed), "failed": ex(a.failed), "prompt": ex(a.prompt),
			"completion": ex(a.completion), "reasoning": ex(a.reasoning), "tokens": ex(a.tokens),
			"estimated": ex(a.estimated), "joules": approx(a.joules),
		}
	}
	expectRows(t, "usage_daily", query(t, conn, "SELECT * FROM usage_daily"), []string{"day", "user", "group", "model"}, want)

	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return month(e) + "|" + e.Group }, nil) {
		mx := 0.0
		for _, v := range a.users {
			mx = max(mx, v)
		}
		want[k] = map[string]figure{"users": ex(float64(len(a.users))), "requests": ex(a.n), "tokens": ex(a.tokens), "max_user_tokens": ex(mx)}
	}
	expectRows(t, "group_usage_monthly", query(t, conn, "SELECT * FROM group_usage_monthly"), []string{"month", "group"}, want)

	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return strings.Join([]string{day(e), e.Backend, e.Model}, "|") },
		func(e *Event) bool { return e.Status < 400 }) {
		want[k] = map[string]figure{
			"requests": ex(a.n), "total_p50_ms": quant(0.5, a.total), "total_p95_ms": quant(0.95, a.total),
			"total_p99_ms": quant(0.99, a.total), "ttft_p50_ms": quant(0.5, a.ttft), "ttft_p95_ms": quant(0.95, a.ttft),
		}
	}
	expectRows(t, "latency_daily", query(t, conn, "SELECT * FROM latency_daily"), []string{"day", "backend", "model"}, want)

	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return day(e) + "|" + e.Kind }, nil) {
		want[k] = map[string]figure{
			"requests": ex(a.n), "auth_avg_us": approx(a.sums[0] / a.n), "decode_avg_us": approx(a.sums[4] / a.n),
			"queue_avg_us": approx(a.sums[5] / a.n), "backend_avg_us": approx(a.sums[7] / a.n),
			"respond_avg_us": approx(a.sums[8] / a.n), "overhead_avg_us": approx(a.sums[9] / a.n),
			"overhead_p99_ms": quant(0.99, divide(a.overhead, slices.Repeat([]float64{1000}, len(a.overhead)))),
		}
	}
	expectRows(t, "stage_overhead_daily", query(t, conn, "SELECT * FROM stage_overhead_daily"), []string{"day", "kind"}, want)

	dayTokens := map[string]float64{}
	for k, a := range group(evs, day, nil) {
		dayTokens[k] = a.okTokens
	}
	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return day(e) + "|" + e.Group }, nil) {
		d, _, _ := strings.Cut(k, "|")
		want[k] = map[string]figure{
			"requests": ex(a.n), "completed_tokens": ex(a.okTokens), "token_share": approx(a.okTokens / dayTokens[d]),
			"queue_avg_ms": approx(a.sums[5] / a.n / 1000), "queue_p95_ms": quant(0.95, a.queue),
			"fairness_delay_p50_ms": quant(0.5, a.fairness), "fairness_delay_p95_ms": quant(0.95, a.fairness),
			"fairness_delay_p99_ms": quant(0.99, a.fairness),
		}
	}
	expectRows(t, "fairness_daily", query(t, conn, "SELECT * FROM fairness_daily"), []string{"day", "group"}, want)

	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return strings.Join([]string{day(e), e.Model, e.Backend}, "|") }, nil) {
		want[k] = map[string]figure{
			"requests": ex(a.n), "errors": ex(a.failed), "error_rate": approx(a.failed / a.n), "rate_limited": ex(a.r429),
			"client_errors": ex(a.r4xx), "server_errors": ex(a.r5xx), "client_gone": ex(a.gone),
		}
	}
	expectRows(t, "errors_daily", query(t, conn, "SELECT * FROM errors_daily"), []string{"day", "model", "backend"}, want)

	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return strings.Join([]string{month(e), e.User, e.Group}, "|") }, nil) {
		want[k] = map[string]figure{"requests": ex(a.n), "tokens": ex(a.tokens), "joules": approx(a.joules)}
	}
	expectRows(t, "top_users_monthly", query(t, conn, "SELECT * FROM top_users_monthly"), []string{"month", "user", "group"}, want)

	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return strings.Join([]string{day(e), e.User, e.Group}, "|") }, nil) {
		want[k] = map[string]figure{
			"requests": ex(a.n), "measured": ex(a.measured), "joules": approx(a.joules), "measured_tokens": ex(a.measuredTokens),
			"joules_per_1k_tokens": approx(a.joules * 1000 / a.measuredTokens),
		}
	}
	expectRows(t, "energy_daily", query(t, conn, "SELECT * FROM energy_daily"), []string{"day", "user", "group"}, want)
}

// namedQueries are the statements of deploy/clickhouse/queries.sql by
// their "-- name:" lines.
func namedQueries(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/clickhouse/queries.sql")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	parts := regexp.MustCompile(`(?m)^-- name: (\w+)\n`).Split(string(raw), -1)
	names := regexp.MustCompile(`(?m)^-- name: (\w+)\n`).FindAllStringSubmatch(string(raw), -1)
	for i, m := range names {
		var lines []string
		for _, l := range strings.Split(parts[i+1], "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "--") {
				lines = append(lines, l)
			}
		}
		out[m[1]] = strings.TrimSuffix(strings.TrimSpace(strings.Join(lines, "\n")), ";")
	}
	return out
}

func TestExampleQueriesAnswer(t *testing.T) {
	evs := genEvents(3000, 4)
	conn, db := clickhouseWith(t, evs)
	insertClickHouse(t, conn, db, evs[:200])
	ctx := context.Background()
	if err := ApplyViews(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	qs := namedQueries(t)
	run := func(name string) []row {
		t.Helper()
		sql, ok := qs[name]
		if !ok {
			t.Fatalf("queries.sql has no query %s", name)
		}
		return query(t, conn, sql)
	}
	if err := conn.Exec(ctx, qs["group_limits_table"]); err != nil {
		t.Fatal(err)
	}
	limits := map[string][2]float64{"faculty": {0, 2}, "staff": {500000, 1}, "students": {100000, 1}} // budget, weight
	// A batch: 18.16 never answers an INSERT ... VALUES sent as a query.
	b, err := conn.PrepareBatch(ctx, "INSERT INTO group_limits (`group`, token_budget, budget_period_days, weight)")
	if err != nil {
		t.Fatal(err)
	}
	for g, l := range limits {
		if err := b.Append(g, uint64(l[0]), uint32(30), l[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}

	want := map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return e.User + "|" + e.Group }, nil) {
		want[k] = map[string]figure{"total_requests": ex(a.n), "total_failed": ex(a.failed), "total_tokens": ex(a.tokens)}
	}
	got := run("usage_per_user")
	expectRows(t, "usage_per_user", got, []string{"user", "group"}, want)
	for i := 1; i < len(got); i++ {
		if got[i]["total_tokens"].(float64) > got[i-1]["total_tokens"].(float64) {
			t.Errorf("usage_per_user is not in descending order of tokens")
		}
	}

	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return day(e) + "|" + e.Model }, nil) {
		want[k] = map[string]figure{"total_requests": ex(a.n), "total_tokens": ex(a.tokens)}
	}
	expectRows(t, "usage_per_model_day", run("usage_per_model_day"), []string{"day", "model"}, want)

	want = map[string]map[string]figure{}
	for g, a := range group(evs, func(e *Event) string { return e.Group }, nil) {
		mx := 0.0
		for _, v := range a.users {
			mx = max(mx, v)
		}
		b := limits[g][0]
		f, gf := 0.0, 0.0
		if b > 0 {
			f, gf = mx/b, a.tokens/(float64(len(a.users))*b)
		}
		want[g] = map[string]figure{"tokens": ex(a.tokens), "token_budget": ex(b), "max_user_fraction": approx(f), "group_fraction": approx(gf)}
	}
	expectRows(t, "group_budget", run("group_budget"), []string{"group"}, want)

	lat := run("latency_per_backend_model")
	okByBM := group(evs, func(e *Event) string { return e.Backend + "|" + e.Model }, func(e *Event) bool { return e.Status < 400 })
	if len(lat) != len(okByBM) {
		t.Errorf("latency_per_backend_model: %d rows, want %d", len(lat), len(okByBM))
	}
	for _, r := range lat {
		a := okByBM[r["backend"].(string)+"|"+r["model"].(string)]
		if a == nil || r["requests"] != a.n {
			t.Errorf("latency_per_backend_model: row %v", r)
			continue
		}
		for i, q := range []float64{0.5, 0.95, 0.99} {
			if good, desc := quant(q, a.total).check(r["total_ms"].([]float64)[i]); !good {
				t.Errorf("latency %s/%s total_ms[%d] = %g, want %s", r["backend"], r["model"], i, r["total_ms"].([]float64)[i], desc)
			}
		}
		if good, desc := quant(0.5, a.ttft).check(r["ttft_ms"].([]float64)[0]); !good {
			t.Errorf("latency %s/%s ttft p50 = %g, want %s", r["backend"], r["model"], r["ttft_ms"].([]float64)[0], desc)
		}
	}

	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return e.Kind }, nil) {
		want[k] = map[string]figure{"total_requests": ex(a.n), "auth_us": approx(a.sums[0] / a.n), "queue_us": approx(a.sums[5] / a.n), "overhead_us": approx(a.sums[9] / a.n)}
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
		want[k] = map[string]figure{"token_share": approx(a.okTokens / dayTokens[d]), "entitled_share": approx(limits[g][1] / dayWeight[d]), "queue_avg_ms": approx(a.sums[5] / a.n / 1000)}
	}
	expectRows(t, "fairness", run("fairness"), []string{"day", "group"}, want)

	want = map[string]map[string]figure{}
	for k, a := range group(evs, func(e *Event) string { return e.Model }, nil) {
		want[k] = map[string]figure{"total_requests": ex(a.n), "total_errors": ex(a.failed), "error_rate": approx(a.failed / a.n), "total_rate_limited": ex(a.r429), "total_server_errors": ex(a.r5xx)}
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
		want[u] = map[string]figure{"total_joules": approx(a.joules), "total_measured": ex(a.measured), "total_requests": ex(a.n), "joules_per_1k_tokens": approx(a.joules * 1000 / a.measuredTokens)}
	}
	expectRows(t, "energy_per_user", run("energy_per_user"), []string{"user"}, want)

	if one := run("one_request"); len(one) != 1 || one[0]["request_id"] != "req-000042" {
		t.Errorf("one_request: %v", one)
	}
	for name := range qs {
		switch name {
		case "group_limits_table", "usage_per_user", "usage_per_model_day", "group_budget", "latency_per_backend_model",
			"gateway_overhead", "fairness", "error_rates", "top_users", "energy_per_user", "one_request",
			"unfinished": // TestViews_UnfinishedRows
		default:
			t.Errorf("queries.sql has %s, which this test does not check", name)
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
