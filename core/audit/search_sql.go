package audit

import (
	"strings"
	"time"
)

// dialect is what the two searchers' SQL differs in.
type dialect struct {
	quote func(ident string) string
	// timeParam is the placeholder a time is compared through, timeArg
	// the argument it takes.
	timeParam string
	timeArg   func(t time.Time, upper bool) any
	// contains is a case-insensitive substring test of column against
	// the next bound argument.
	contains func(col string) string
	// day is the UTC date of a time column as "2006-01-02" text; int and
	// float cast an aggregate to the Int64 and Float64 the scans read
	// (ClickHouse's sums are unsigned, SQLite's need nothing).
	day        func(col string) string
	int, float func(expr string) string
}

// where builds the WHERE clause of q (with its leading " WHERE ", or "")
// and its arguments. User input only ever travels as a bound argument.
func (d dialect) where(q Query) (string, []any) {
	var conds []string
	var args []any
	eq := func(col string, v any) {
		conds = append(conds, d.quote(col)+" = ?")
		args = append(args, v)
	}
	if q.User != "" {
		eq("user", q.User)
	}
	if q.UserID != 0 {
		eq("user_id", q.UserID)
	}
	if q.Model != "" {
		eq("model", q.Model)
	}
	if q.Status != 0 {
		eq("status", q.Status)
	}
	switch q.State {
	case StateCompleted:
		conds = append(conds, "("+d.quote("state")+" = 'finished' AND "+d.quote("status")+" < 400)")
	case StateFailed:
		conds = append(conds, "("+d.quote("status")+" >= 400 OR "+d.quote("state")+" IN ('interrupted', 'panic'))")
	case RowStarted, RowInterrupted, RowPanic:
		eq("state", q.State)
	}
	if !q.From.IsZero() {
		conds = append(conds, d.quote("time")+" >= "+d.timeParam)
		args = append(args, d.timeArg(q.From, false))
	}
	if !q.To.IsZero() {
		conds = append(conds, d.quote("time")+" < "+d.timeParam)
		args = append(args, d.timeArg(q.To, true))
	}
	if q.Text != "" {
		var or []string
		for _, c := range []string{"request_body", "response_body", "error"} {
			or = append(or, d.contains(d.quote(c)))
			args = append(args, q.Text)
		}
		conds = append(conds, "("+strings.Join(or, " OR ")+")")
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

func (d dialect) columns(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = d.quote(c)
	}
	return strings.Join(q, ", ")
}
