package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// sqliteTimeLayout is how the embedded sink keeps times: UTC text, fixed
// width, so text order is time order and the sqlite3 CLI's date functions
// read it.
const sqliteTimeLayout = "2006-01-02 15:04:05.000000"

var sqliteDialect = dialect{
	quote:     func(ident string) string { return `"` + ident + `"` },
	timeParam: "?",
	timeArg:   func(t time.Time, _ bool) any { return t.UTC().Format(sqliteTimeLayout) },
	// SQLite's lower() folds ASCII only, as ClickHouse's
	// positionCaseInsensitive does.
	contains: func(col string) string { return "instr(lower(" + col + "), lower(?)) > 0" },
	day:      func(col string) string { return "substr(" + col + ", 1, 10)" },
	int:      func(expr string) string { return expr },
	float:    func(expr string) string { return "COALESCE(" + expr + ", 0.0)" },
}

// sqliteSearcher reads the embedded sink's table, which has one row per
// request id (the sink's primary key), so no dedup is needed.
type sqliteSearcher struct{ db *sql.DB }

// NewSQLiteSearcher returns a Searcher over the embedded sink's requests
// table in db.
func NewSQLiteSearcher(db *sql.DB) Searcher { return &sqliteSearcher{db: db} }

func (s *sqliteSearcher) Search(ctx context.Context, q Query) ([]Event, int, error) {
	if err := q.Validate(); err != nil {
		return nil, 0, err
	}
	where, args := sqliteDialect.where(q)
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM requests`+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("audit: count requests: %w", err)
	}
	if total == 0 || q.Skip >= total {
		return []Event{}, total, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+sqliteDialect.columns(listColumns)+` FROM requests`+where+
		` ORDER BY "time" DESC, "request_id" DESC LIMIT ? OFFSET ?`, append(args, q.limit(), q.Skip)...)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: search requests: %w", err)
	}
	defer rows.Close()
	out := make([]Event, 0, min(q.limit(), total-q.Skip))
	for rows.Next() {
		var e Event
		if err := rows.Scan(sqliteFields(&e, listColumns)...); err != nil {
			return nil, 0, fmt.Errorf("audit: read requests row: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("audit: search requests: %w", err)
	}
	return out, total, nil
}

func (s *sqliteSearcher) Get(ctx context.Context, requestID string) (Event, error) {
	var e Event
	err := s.db.QueryRowContext(ctx, `SELECT `+sqliteDialect.columns(Columns)+` FROM requests WHERE "request_id" = ?`,
		requestID).Scan(sqliteFields(&e, Columns)...)
	if errors.Is(err, sql.ErrNoRows) {
		return Event{}, ErrNotFound
	}
	if err != nil {
		return Event{}, fmt.Errorf("audit: get request %q: %w", requestID, err)
	}
	return e, nil
}

// sqliteFields is fields with the time read through sqliteTime.
func sqliteFields(e *Event, cols []string) []any {
	out := fields(e, cols)
	for i, c := range cols {
		if c == "time" {
			out[i] = sqliteTime{&e.Time}
		}
	}
	return out
}

// sqliteTime scans the time column: text in sqliteTimeLayout (or RFC 3339),
// or integer Unix microseconds.
type sqliteTime struct{ t *time.Time }

func (d sqliteTime) Scan(src any) error {
	var err error
	switch v := src.(type) {
	case time.Time:
		*d.t = v.UTC()
	case int64:
		*d.t = time.UnixMicro(v).UTC()
	case string:
		*d.t, err = parseSQLiteTime(v)
	case []byte:
		*d.t, err = parseSQLiteTime(string(v))
	default:
		err = fmt.Errorf("unexpected %T", src)
	}
	if err != nil {
		return fmt.Errorf("audit: time column: %w", err)
	}
	return nil
}

func parseSQLiteTime(s string) (time.Time, error) {
	if t, err := time.ParseInLocation(sqliteTimeLayout, s, time.UTC); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMicro(n).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time", s)
}
