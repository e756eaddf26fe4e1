package audit

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// oldSQLiteSchema is the embedded sink's schema before request_rows (the
// release at 6a3dff9): one table requests with every column.
const oldSQLiteSchema = `CREATE TABLE IF NOT EXISTS requests (
 request_id TEXT PRIMARY KEY, time TEXT NOT NULL, replica TEXT NOT NULL,
 user_id INTEGER NOT NULL, user TEXT NOT NULL, "group" TEXT NOT NULL, key_id TEXT NOT NULL, client_ip TEXT NOT NULL, user_agent TEXT NOT NULL,
 dialect TEXT NOT NULL, route TEXT NOT NULL, kind TEXT NOT NULL, model TEXT NOT NULL, stream INTEGER NOT NULL,
 backend TEXT NOT NULL, node TEXT NOT NULL, gpus TEXT NOT NULL, attempts INTEGER NOT NULL,
 status INTEGER NOT NULL, error_code TEXT NOT NULL, error TEXT NOT NULL, finish_reason TEXT NOT NULL, client_gone INTEGER NOT NULL,
 state TEXT NOT NULL DEFAULT 'finished',
 prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, reasoning_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, tokens_estimated INTEGER NOT NULL,
 total_us INTEGER NOT NULL, auth_us INTEGER NOT NULL, limit_us INTEGER NOT NULL, read_us INTEGER NOT NULL, check_us INTEGER NOT NULL, decode_us INTEGER NOT NULL, queue_us INTEGER NOT NULL, encode_us INTEGER NOT NULL, backend_us INTEGER NOT NULL, respond_us INTEGER NOT NULL, ttft_us INTEGER NOT NULL,
 fairness_delay_us INTEGER NOT NULL DEFAULT 0, stream_plugin_us INTEGER NOT NULL DEFAULT 0,
 chunks INTEGER NOT NULL, bytes_in INTEGER NOT NULL, bytes_out INTEGER NOT NULL,
 request_body TEXT NOT NULL, response_body TEXT NOT NULL, content_truncated INTEGER NOT NULL,
 decision TEXT NOT NULL, energy_j REAL NOT NULL);
CREATE INDEX IF NOT EXISTS requests_time ON requests (time);
CREATE INDEX IF NOT EXISTS requests_user_time ON requests (user, time);
CREATE INDEX IF NOT EXISTS requests_model_time ON requests (model, time);
CREATE TABLE IF NOT EXISTS blobs (
 sha256 TEXT PRIMARY KEY, media_type TEXT NOT NULL, size INTEGER NOT NULL, data BLOB NOT NULL,
 time TEXT NOT NULL, request_id TEXT NOT NULL)`

// distinctEvent is request i with every field set, each to a value no
// other field has (so a column read from another's place shows), and
// text that needs escaping in JSON.
func distinctEvent(i int) Event {
	var e Event
	v := reflect.ValueOf(&e).Elem()
	for f := 0; f < v.NumField(); f++ {
		fv, name := v.Field(f), v.Type().Field(f).Name
		switch fv.Kind() {
		case reflect.String:
			fv.SetString(fmt.Sprintf("%s-%d", name, i))
		case reflect.Bool:
			fv.SetBool((i+f)%2 == 0)
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			fv.SetUint(uint64(1000*i + f + 1))
		case reflect.Int64:
			fv.SetInt(int64(1000*i + f + 1))
		case reflect.Float64:
			fv.SetFloat(float64(i) + 0.25)
		}
	}
	e.Time = time.Date(2026, 3, 10, 12, 0, i, 1000*i, time.UTC)
	e.State, e.Until = RowFinished, time.Time{}
	e.BytesOut = 1<<62 + uint64(i)
	e.UserAgent = "quote\" \\ ] , \n\t\x01\x1f\x7f é \xff\xfe end"
	return e
}

// insertOld writes evs into a file of the old schema, as that release did.
func insertOld(t *testing.T, db *sql.DB, cols []string, evs []Event) {
	t.Helper()
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = `"` + c + `"`
	}
	ins := "INSERT INTO requests (" + strings.Join(q, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(cols)-1) + ")"
	for _, e := range evs {
		args := fields(&e, cols)
		for i, c := range cols {
			switch c {
			case "time":
				args[i] = e.Time.UTC().Format(sqliteTimeLayout)
			case "bytes_in", "bytes_out":
				args[i] = int64(reflect.ValueOf(args[i]).Elem().Uint())
			}
		}
		if _, err := db.Exec(ins, args...); err != nil {
			t.Fatal(err)
		}
	}
}

// A file written by an earlier release (the table requests, with or
// without the columns added since) opens: its rows move to request_rows
// and read back through the view as written (the added columns 0 and
// finished); a second open changes nothing; the sink then writes there,
// and a migrated started row is completed by its finished one.
func TestEmbeddedMigrateRequestsTable(t *testing.T) {
	for _, added := range []bool{true, false} {
		t.Run(fmt.Sprintf("added=%v", added), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.db")
			raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
			if err != nil {
				t.Fatal(err)
			}
			schema, cols := oldSQLiteSchema, Columns
			if !added { // the first release: no columns of sqliteAdded
				cols = nil
				for _, c := range Columns {
					skip := false
					for _, a := range sqliteAdded {
						skip = skip || a[0] == c
					}
					if !skip {
						cols = append(cols, c)
					}
				}
				for _, a := range sqliteAdded {
					schema = strings.Replace(schema, " "+a[0]+" "+a[1]+",", "", 1)
				}
				if strings.Contains(schema, "stream_plugin_us") || strings.Contains(schema, "'finished'") {
					t.Fatalf("old schema still has the added columns:\n%s", schema)
				}
			}
			if _, err := raw.Exec(schema); err != nil {
				t.Fatal(err)
			}
			want := make([]Event, 5)
			for i := range want {
				want[i] = distinctEvent(i)
				if !added {
					want[i].FairnessDelayUs, want[i].StreamPluginUs = 0, 0
				}
			}
			if added {
				want[4].State, want[4].Status = RowStarted, 0
			}
			insertOld(t, raw, cols, want)
			raw.Close()

			for range 2 {
				db, err := OpenEmbedded(path)
				if err != nil {
					t.Fatal(err)
				}
				var kind string
				if err := db.QueryRow(`SELECT type FROM sqlite_master WHERE name = 'requests'`).Scan(&kind); err != nil || kind != "view" {
					t.Fatalf("requests is a %q (%v), want a view", kind, err)
				}
				for _, w := range want {
					got, err := NewSQLiteSearcher(db).Get(context.Background(), w.RequestID)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, w) {
						t.Fatalf("%s reads\n%+v\nwant\n%+v", w.RequestID, got, w)
					}
				}
				db.Close()
			}

			db, err := OpenEmbedded(path)
			if err != nil {
				t.Fatal(err)
			}
			s := newSQLiteSink(db, true)
			defer s.close()
			fin := want[4]
			fin.State, fin.Status = RowFinished, 201
			if !added {
				fin = want[4] // finished already: a finished row is not replaced
				fin.Error = "not stored"
			}
			next := distinctEvent(9)
			if err := s.write(context.Background(), []Event{fin, next}, false); err != nil {
				t.Fatal(err)
			}
			if !added {
				fin = want[4]
			}
			for _, w := range []Event{fin, next} {
				got, err := NewSQLiteSearcher(db).Get(context.Background(), w.RequestID)
				if err != nil || !reflect.DeepEqual(got, w) {
					t.Errorf("%s after the migration reads\n%+v (%v)\nwant\n%+v", w.RequestID, got, err, w)
				}
			}
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM requests`).Scan(&n); err != nil || n != 6 {
				t.Errorf("%d rows (%v), want 6", n, err)
			}
		})
	}
}

// Every column reads back as the sink wrote it, each from its own place
// (distinctEvent), text with quotes, backslashes, control characters and
// invalid UTF-8 byte for byte; the view's triggers take an insert and a
// delete as the table did.
func TestSQLiteSinkColdColumns(t *testing.T) {
	db, err := OpenEmbedded(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	s := newSQLiteSink(db, true)
	defer s.close()
	ctx := context.Background()
	evs := []Event{distinctEvent(1), distinctEvent(2), distinctEvent(3)}
	evs[2].UserAgent, evs[2].KeyID = "", "a\x00b"
	if err := s.write(ctx, evs[:2], false); err != nil {
		t.Fatal(err)
	}
	insertOld(t, db, Columns, evs[2:]) // through the view's trigger
	for _, w := range evs {
		got, err := NewSQLiteSearcher(db).Get(ctx, w.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s reads\n%+v\nwant\n%+v", w.RequestID, got, w)
		}
	}
	if _, err := db.Exec(`DELETE FROM requests WHERE time < ?`, evs[1].Time.Format(sqliteTimeLayout)); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSQLiteSearcher(db).Get(ctx, evs[0].RequestID); err != ErrNotFound {
		t.Errorf("a deleted row: %v, want ErrNotFound", err)
	}
	if _, err := NewSQLiteSearcher(db).Get(ctx, evs[1].RequestID); err != nil {
		t.Errorf("a row the delete kept: %v", err)
	}
}

// The searches, usage sums, retention and interruption marker read
// request_rows through an index, not a scan of the table.
func TestEmbeddedQueryPlans(t *testing.T) {
	db, err := OpenEmbedded(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	type plan struct {
		name, q string
		args    []any
	}
	var plans []plan
	for _, q := range []Query{{}, {From: from, To: to}, {User: "u", From: from}, {Model: "m"}, {UserID: 3, From: from, To: to}} {
		where, args := sqliteDialect.where(q)
		plans = append(plans,
			plan{fmt.Sprintf("count %+v", q), `SELECT count(*) FROM requests` + where, args},
			plan{fmt.Sprintf("search %+v", q), `SELECT ` + sqliteDialect.columns(listColumns) + ` FROM requests` + where +
				` ORDER BY "time" DESC, "request_id" DESC LIMIT ? OFFSET ?`, append(args, 10, 0)})
	}
	for _, by := range []UsageBy{ByDay | ByModel, ByUser} {
		stmt, args := sqliteDialect.usageSQL("requests", UsageQuery{From: from, To: to, By: by})
		plans = append(plans, plan{fmt.Sprintf("usage by %b", by), stmt, args})
	}
	plans = append(plans,
		plan{"get", `SELECT ` + sqliteDialect.columns(Columns) + ` FROM requests WHERE "request_id" = ?`, []any{"x"}},
		plan{"prune", `SELECT rowid FROM request_rows WHERE "time" < ? AND "state" != 'started' LIMIT ?`, []any{"2026", 10}},
		plan{"interrupt", `SELECT rowid FROM request_rows WHERE "replica" = ? AND "state" = 'started' AND "time" >= ? AND "time" < ?`,
			[]any{"r", "2026", "2027"}})
	for _, p := range plans {
		rows, err := db.Query(`EXPLAIN QUERY PLAN `+p.q, p.args...)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		var steps []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			steps = append(steps, detail)
		}
		rows.Close()
		all := strings.Join(steps, "; ")
		t.Logf("%s: %s", p.name, all)
		if strings.Contains(all, "SCAN request_rows") && !strings.Contains(all, "USING") {
			t.Errorf("%s scans the table: %s", p.name, all)
		}
		if !strings.Contains(all, "INDEX") {
			t.Errorf("%s uses no index: %s", p.name, all)
		}
	}
}

// Every column of Event is stored once: in request_rows or in cold.
func TestSQLiteColumnsSplit(t *testing.T) {
	seen := map[string]int{}
	for _, c := range sqliteHot {
		seen[c[0]]++
	}
	for _, c := range sqliteCold {
		seen[c]++
	}
	for _, c := range Columns {
		if seen[c] != 1 {
			t.Errorf("column %s stored %d times", c, seen[c])
		}
		delete(seen, c)
	}
	for c := range seen {
		t.Errorf("%s is stored but not a column of Event", c)
	}
}
