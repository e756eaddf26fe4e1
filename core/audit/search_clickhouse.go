package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// chSearcher reads the ClickHouse table. The table is a ReplacingMergeTree
// that collapses a retried batch's duplicates only when parts merge, so
// every read says FINAL: a request is counted and returned once even
// before the merge.
type chSearcher struct {
	conn  driver.Conn
	table string // `db`.requests FINAL
	blobs string // `db`.blobs FINAL
}

var chDialect = dialect{
	quote:     chQuote,
	timeParam: "toDateTime(?)",
	timeArg:   chSeconds,
	contains:  func(col string) string { return "positionCaseInsensitive(" + col + ", ?) > 0" },
	day:       func(col string) string { return "toString(toDate(" + col + "))" },
	int:       func(expr string) string { return "toInt64(" + expr + ")" },
	float:     func(expr string) string { return "toFloat64(" + expr + ")" },
}

// chSeconds is a bound of the time range in whole seconds, for 18.16's
// DateTime (DateTime64 needs 20.1): a lower bound rounds down, an upper
// (exclusive) one up, so a range never loses an event; a bound with a
// fraction of a second may admit up to a second more.
func chSeconds(t time.Time, upper bool) any {
	s := t.Unix()
	if upper && t.Nanosecond() != 0 {
		s++
	}
	return s
}

// chQuote quotes a ClickHouse identifier.
func chQuote(ident string) string {
	return "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`").Replace(ident) + "`"
}

// NewClickHouseSearcher returns a Searcher over database.requests through
// conn (clickhouse-go's native protocol). It works on ClickHouse 18.16 and
// later: no window functions, no server-side parameters (the driver binds
// arguments, quoted, on the client).
func NewClickHouseSearcher(conn driver.Conn, database string) Searcher {
	return &chSearcher{conn: conn, table: chQuote(database) + ".requests FINAL", blobs: chQuote(database) + ".blobs FINAL"}
}

func (s *chSearcher) Search(ctx context.Context, q Query) ([]Event, int, error) {
	if err := q.Validate(); err != nil {
		return nil, 0, err
	}
	where, args := chDialect.where(q)
	var total uint64
	if err := s.conn.QueryRow(ctx, "SELECT count() FROM "+s.table+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("audit: count requests: %w", err)
	}
	if total == 0 || q.Skip >= int(total) {
		return []Event{}, int(total), nil
	}
	sql := "SELECT " + chDialect.columns(listColumns) + " FROM " + s.table + where +
		" ORDER BY `time` DESC, `request_id` DESC LIMIT ? OFFSET ?"
	rows, err := s.conn.Query(ctx, sql, append(args, q.limit(), q.Skip)...)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: search requests: %w", err)
	}
	defer rows.Close()
	out := make([]Event, 0, min(q.limit(), int(total)-q.Skip))
	for rows.Next() {
		var e Event
		if err := rows.Scan(fields(&e, listColumns)...); err != nil {
			return nil, 0, fmt.Errorf("audit: read requests row: %w", err)
		}
		e.Time = e.Time.UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("audit: search requests: %w", err)
	}
	return out, int(total), nil
}

func (s *chSearcher) Get(ctx context.Context, requestID string) (Event, error) {
	var e Event
	err := s.conn.QueryRow(ctx, "SELECT "+chDialect.columns(Columns)+" FROM "+s.table+
		" WHERE `request_id` = ? LIMIT 1", requestID).Scan(fields(&e, Columns)...)
	if errors.Is(err, sql.ErrNoRows) {
		return Event{}, ErrNotFound
	}
	if err != nil {
		return Event{}, fmt.Errorf("audit: get request %q: %w", requestID, err)
	}
	e.Time = e.Time.UTC()
	return e, nil
}
