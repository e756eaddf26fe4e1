package audit

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// The embedded sink stores a request in the table request_rows: the
// columns that searches, usage sums, retention and the interruption
// marker filter, group or change are real columns (sqliteHot), and the
// others, which only a whole row's read shows, are packed into one JSON
// array, cold (sqliteCold, in that order). The view requests puts
// Columns back together in Columns' order, so readers (Search, Get,
// Usage, docs/audit.md's queries) see the table they always saw.
//
// Why: every bound value costs the driver a name lookup, a bind under the
// connection's mutex, an unbind, and for text a C malloc, copy and free;
// the VM a register and a record field. 19 values a row instead of 49 take
// 36 % fewer instructions a row and 17-30 % less CPU (bench/RESULTS.md).

// sqliteHot are request_rows' columns before cold, in table order, with
// their types.
var sqliteHot = [...][2]string{
	{"request_id", "TEXT PRIMARY KEY"}, {"time", "TEXT NOT NULL"}, {"replica", "TEXT NOT NULL"},
	{"user_id", "INTEGER NOT NULL"}, {"user", "TEXT NOT NULL"}, {"group", "TEXT NOT NULL"},
	{"model", "TEXT NOT NULL"}, {"status", "INTEGER NOT NULL"}, {"error_code", "TEXT NOT NULL"},
	{"error", "TEXT NOT NULL"}, {"state", "TEXT NOT NULL"},
	{"prompt_tokens", "INTEGER NOT NULL"}, {"completion_tokens", "INTEGER NOT NULL"},
	{"request_body", "TEXT NOT NULL"}, {"response_body", "TEXT NOT NULL"}, {"content_truncated", "INTEGER NOT NULL"},
	{"decision", "TEXT NOT NULL"}, {"energy_j", "REAL NOT NULL"},
}

// sqliteCold are the columns packed into cold, by their index in the
// array; appendCold writes them in this order. A column added later goes
// at the end (rows written before it then lack it: the view must read
// it through ifnull).
var sqliteCold = [...]string{
	"key_id", "client_ip", "user_agent", "dialect", "route", "kind", "stream",
	"backend", "node", "gpus", "attempts", "finish_reason", "client_gone",
	"reasoning_tokens", "cached_tokens", "tokens_estimated",
	"total_us", "auth_us", "limit_us", "read_us", "check_us", "decode_us", "queue_us", "encode_us", "backend_us", "respond_us", "ttft_us",
	"fairness_delay_us", "stream_plugin_us", "chunks", "bytes_in", "bytes_out",
}

// sqliteTables are the embedded sink's tables and indexes: request_rows
// (one row per request id: the primary key makes a replayed batch
// harmless), and blobs as in ClickHouse (schema/0002_blobs.sql), one per
// hash. Times are UTC text in sqliteTimeLayout.
var sqliteTables = func() string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS request_rows (")
	for _, c := range sqliteHot {
		fmt.Fprintf(&b, "\n %q %s,", c[0], c[1])
	}
	b.WriteString("\n cold TEXT NOT NULL);\n")
	b.WriteString(`CREATE INDEX IF NOT EXISTS request_rows_time ON request_rows (time);
CREATE INDEX IF NOT EXISTS request_rows_user_time ON request_rows (user, time);
CREATE INDEX IF NOT EXISTS request_rows_model_time ON request_rows (model, time);
CREATE TABLE IF NOT EXISTS blobs (
 sha256 TEXT PRIMARY KEY, media_type TEXT NOT NULL, size INTEGER NOT NULL, data BLOB NOT NULL,
 time TEXT NOT NULL, request_id TEXT NOT NULL)`)
	return b.String()
}()

// sqliteView is the view requests (Columns, in order) over request_rows,
// and the triggers that let a client insert into it and delete from it
// as from the table it replaced (docs/audit.md). json_extract, not ->>,
// so that a sqlite3 CLI before 3.38 with the JSON functions reads it.
var sqliteView = func() string {
	cold := map[string]int{}
	for i, c := range sqliteCold {
		cold[c] = i
	}
	sel := make([]string, len(Columns))
	vals := make([]string, 0, len(sqliteHot)+1)
	names := make([]string, 0, len(sqliteHot)+1)
	for i, c := range Columns {
		if k, ok := cold[c]; ok {
			sel[i] = fmt.Sprintf("json_extract(cold, '$[%d]') AS %q", k, c)
		} else {
			sel[i] = fmt.Sprintf("%q", c)
		}
	}
	for _, c := range sqliteHot {
		names = append(names, fmt.Sprintf("%q", c[0]))
		vals = append(vals, fmt.Sprintf("NEW.%q", c[0]))
	}
	arr := make([]string, len(sqliteCold))
	for i, c := range sqliteCold {
		arr[i] = fmt.Sprintf("NEW.%q", c)
	}
	names = append(names, "cold")
	vals = append(vals, "json_array("+strings.Join(arr, ", ")+")")
	return "CREATE VIEW IF NOT EXISTS requests AS SELECT " + strings.Join(sel, ", ") + " FROM request_rows;\n" +
		"CREATE TRIGGER IF NOT EXISTS requests_insert INSTEAD OF INSERT ON requests BEGIN INSERT INTO request_rows (" +
		strings.Join(names, ", ") + ") VALUES (" + strings.Join(vals, ", ") + "); END;\n" +
		"CREATE TRIGGER IF NOT EXISTS requests_delete INSTEAD OF DELETE ON requests BEGIN " +
		"DELETE FROM request_rows WHERE request_id = OLD.request_id; END"
}()

// sqliteSchema is every object of the embedded sink's file.
var sqliteSchema = sqliteTables + ";\n" + sqliteView

// appendCold appends e's sqliteCold values as a JSON array.
func appendCold(b []byte, e *Event) []byte {
	b = append(b, '[')
	b = appendJSONString(b, e.KeyID)
	b = append(b, ',')
	b = appendJSONString(b, e.ClientIP)
	b = append(b, ',')
	b = appendJSONString(b, e.UserAgent)
	b = append(b, ',')
	b = appendJSONString(b, e.Dialect)
	b = append(b, ',')
	b = appendJSONString(b, e.Route)
	b = append(b, ',')
	b = appendJSONString(b, e.Kind)
	b = append(b, ',')
	b = appendJSONBool(b, e.Stream)
	b = append(b, ',')
	b = appendJSONString(b, e.Backend)
	b = append(b, ',')
	b = appendJSONString(b, e.Node)
	b = append(b, ',')
	b = appendJSONString(b, e.GPUs)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(e.Attempts), 10)
	b = append(b, ',')
	b = appendJSONString(b, e.FinishReason)
	b = append(b, ',')
	b = appendJSONBool(b, e.ClientGone)
	for _, v := range [...]uint32{e.ReasoningTokens, e.CachedTokens} {
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(v), 10)
	}
	b = append(b, ',')
	b = appendJSONBool(b, e.TokensEstimated)
	for _, v := range [...]uint32{e.TotalUs, e.AuthUs, e.LimitUs, e.ReadUs, e.CheckUs, e.DecodeUs, e.QueueUs,
		e.EncodeUs, e.BackendUs, e.RespondUs, e.TTFTUs, e.FairnessDelayUs, e.StreamPluginUs, e.Chunks} {
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(v), 10)
	}
	// bytes_in and bytes_out: SQLite's integers are signed 64-bit, as
	// the table's INTEGER columns were.
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(e.BytesIn), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(e.BytesOut), 10)
	return append(b, ']')
}

func appendJSONBool(b []byte, v bool) []byte {
	if v {
		return append(b, '1')
	}
	return append(b, '0')
}

// appendJSONString appends s as a JSON string that SQLite's json_extract
// gives back byte for byte: '"', '\\' and control characters escaped;
// other bytes, invalid UTF-8 included, as they are (SQLite's JSON
// parser takes them, as its text columns did).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// migrateSQLite brings an existing file to the current schema in one
// immediate transaction (its write lock keeps two gateways from doing it
// twice). A file written before request_rows has a table requests with
// every column: it gets the columns added since its release
// (sqliteAdded), its rows are copied into request_rows (the cold ones
// packed by SQLite's json_array, as appendCold packs them), and the
// table makes way for the view.
func migrateSQLite(db *sql.DB) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var kind string
	err = tx.QueryRow(`SELECT type FROM sqlite_master WHERE name = 'requests'`).Scan(&kind)
	if err == sql.ErrNoRows || kind == "view" {
		return nil
	}
	if err != nil {
		return err
	}
	if err := addSQLiteColumns(tx); err != nil {
		return err
	}
	hot := make([]string, 0, len(sqliteHot)+1)
	for _, c := range sqliteHot {
		hot = append(hot, fmt.Sprintf("%q", c[0]))
	}
	cold := make([]string, len(sqliteCold))
	for i, c := range sqliteCold {
		cold[i] = fmt.Sprintf("%q", c)
	}
	cols := strings.Join(hot, ", ")
	for _, stmt := range []string{
		sqliteTables,
		"INSERT INTO request_rows (" + cols + ", cold) SELECT " + cols + ", json_array(" + strings.Join(cold, ", ") +
			") FROM requests ORDER BY rowid",
		"DROP TABLE requests",
		sqliteView,
	} {
		if _, err := tx.Exec(stmt); err != nil {
			return fmt.Errorf("move the requests table to request_rows: %w", err)
		}
	}
	return tx.Commit()
}

// sqliteAdded are the columns added to the table requests after its
// first release (ClickHouse's schema/0003_timings.sql and 0004_state.sql),
// with their definitions: a file written by an earlier release gets them
// before its rows move to request_rows, those rows reading 0 and finished.
var sqliteAdded = [...][2]string{
	{"fairness_delay_us", "INTEGER NOT NULL DEFAULT 0"},
	{"stream_plugin_us", "INTEGER NOT NULL DEFAULT 0"},
	{"state", "TEXT NOT NULL DEFAULT 'finished'"},
}

// addSQLiteColumns adds the columns of sqliteAdded that the table
// requests lacks (SQLite has no ADD COLUMN IF NOT EXISTS).
func addSQLiteColumns(tx *sql.Tx) error {
	rows, err := tx.Query(`SELECT name FROM pragma_table_info('requests')`)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		have[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, c := range sqliteAdded {
		if !have[c[0]] {
			if _, err := tx.Exec(`ALTER TABLE requests ADD COLUMN ` + c[0] + ` ` + c[1]); err != nil {
				return fmt.Errorf("add column %s: %w", c[0], err)
			}
		}
	}
	return nil
}
