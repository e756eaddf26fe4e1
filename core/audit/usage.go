package audit

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// UsageBy is what a usage query groups by: any union of its bits.
type UsageBy uint8

// The keys of a usage row.
const (
	ByDay   UsageBy = 1 << iota // UTC day of the request
	ByUser                      // user id (the row's name is the latest seen)
	ByGroup                     // group name, as recorded with the request
	ByModel                     // model as the client named it
)

// MaxUsageDays bounds a by-day range: a year of days per model is already
// more rows than a chart shows.
const MaxUsageDays = 366

// UsageQuery selects and groups requests for Aggregator.Usage.
type UsageQuery struct {
	UserID int64  // 0: every user
	Group  string // "": every group
	// From is inclusive, To exclusive; both are required.
	From, To time.Time
	By       UsageBy
	// Limit keeps the Limit rows with the most tokens, or the most
	// energy with MostEnergy (0: all, ordered by their keys).
	Limit      int
	MostEnergy bool
}

// UsageRow is one group of requests. Keys not grouped by are zero.
type UsageRow struct {
	Day    string // "2026-03-10" (UTC)
	UserID int64
	User   string
	Group  string
	Model  string

	Requests         int64
	Failed           int64 // status 400 and up, interrupted, panic
	PromptTokens     int64
	CompletionTokens int64
	Tokens           int64 // prompt + completion
	// EnergyJ sums the requests' GPU energy estimates (Event.EnergyJ);
	// Measured counts the requests that have one (their node reported
	// power) and MeasuredTokens their tokens, so a mean per token is
	// EnergyJ / MeasuredTokens, not EnergyJ / Tokens.
	EnergyJ        float64
	Measured       int64
	MeasuredTokens int64
}

// Aggregator sums the request audit; the embedded sink's and ClickHouse's
// searchers are both one.
type Aggregator interface {
	Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error)
}

// Validate reports the first bad field of q.
func (q UsageQuery) Validate() error {
	switch {
	case q.From.IsZero() || q.To.IsZero():
		return fmt.Errorf("a usage query needs a time range")
	case !q.From.Before(q.To):
		return fmt.Errorf("the start of the range must be before its end")
	case q.By&ByDay != 0 && q.To.Sub(q.From) > MaxUsageDays*24*time.Hour:
		return fmt.Errorf("a by-day range spans at most %d days", MaxUsageDays)
	case q.Limit < 0 || q.Limit > MaxLimit:
		return fmt.Errorf("limit must be between 1 and %d", MaxLimit)
	case q.UserID < 0:
		return fmt.Errorf("user_id must be a positive integer")
	}
	return nil
}

// usageSQL builds the query of q in d over table, and its arguments. The
// result columns are always the same (keys not grouped by are constants),
// so one Scan fits every grouping.
func (d dialect) usageSQL(table string, q UsageQuery) (string, []any) {
	where, args := d.where(Query{UserID: q.UserID, From: q.From, To: q.To})
	if q.Group != "" {
		if where == "" {
			where = " WHERE "
		} else {
			where += " AND "
		}
		where += d.quote("group") + " = ?"
		args = append(args, q.Group)
	}
	var keys []string
	key := func(on bool, expr, zero string) string {
		if !on {
			return zero
		}
		keys = append(keys, expr)
		return expr
	}
	day := key(q.By&ByDay != 0, d.day(d.quote("time")), "''")
	uid := key(q.By&ByUser != 0, d.quote("user_id"), d.int("0"))
	group := key(q.By&ByGroup != 0, d.quote("group"), "''")
	model := key(q.By&ByModel != 0, d.quote("model"), "''")
	user := "''"
	if q.By&ByUser != 0 {
		user = "max(" + d.quote("user") + ")"
	}
	tokens := d.quote("prompt_tokens") + " + " + d.quote("completion_tokens")
	measured := d.quote("energy_j") + " > 0"
	failed := d.quote("status") + " >= 400 OR " + d.quote("state") + " IN ('interrupted', 'panic')"
	cols := []string{
		day + " AS d", uid + " AS u", user, group + " AS g", model + " AS m",
		d.int("count(*)"),
		d.int("sum(CASE WHEN " + failed + " THEN 1 ELSE 0 END)"),
		d.int("sum(" + d.quote("prompt_tokens") + ")"),
		d.int("sum(" + d.quote("completion_tokens") + ")"),
		d.int("sum("+tokens+")") + " AS tokens",
		d.float("sum("+d.quote("energy_j")+")") + " AS joules",
		d.int("sum(CASE WHEN " + measured + " THEN 1 ELSE 0 END)"),
		d.int("sum(CASE WHEN " + measured + " THEN " + tokens + " ELSE 0 END)"),
	}
	s := "SELECT " + strings.Join(cols, ", ") + " FROM " + table + where
	if len(keys) > 0 {
		s += " GROUP BY " + strings.Join(keys, ", ")
	}
	order := "d, u, g, m"
	if q.Limit > 0 && q.MostEnergy {
		order = "joules DESC, " + order
	} else if q.Limit > 0 {
		order = "tokens DESC, " + order
	}
	s += " ORDER BY " + order
	if q.Limit > 0 {
		s += " LIMIT ?"
		args = append(args, q.Limit)
	}
	return s, args
}

// usageFields are Scan's destinations for a UsageRow, in usageSQL's order.
func usageFields(r *UsageRow) []any {
	return []any{&r.Day, &r.UserID, &r.User, &r.Group, &r.Model, &r.Requests, &r.Failed,
		&r.PromptTokens, &r.CompletionTokens, &r.Tokens, &r.EnergyJ, &r.Measured, &r.MeasuredTokens}
}

// Usage sums the embedded sink's requests.
func (s *sqliteSearcher) Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	stmt, args := sqliteDialect.usageSQL("requests", q)
	rows, err := s.db.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("audit: sum usage: %w", err)
	}
	defer rows.Close()
	out := []UsageRow{}
	for rows.Next() {
		var r UsageRow
		if err := rows.Scan(usageFields(&r)...); err != nil {
			return nil, fmt.Errorf("audit: read usage row: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: sum usage: %w", err)
	}
	return out, nil
}

// Usage sums ClickHouse's requests (FINAL: a row stored twice counts once).
func (s *chSearcher) Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	stmt, args := chDialect.usageSQL(s.table, q)
	rows, err := s.conn.Query(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("audit: sum usage: %w", err)
	}
	defer rows.Close()
	out := []UsageRow{}
	for rows.Next() {
		var r UsageRow
		if err := rows.Scan(usageFields(&r)...); err != nil {
			return nil, fmt.Errorf("audit: read usage row: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: sum usage: %w", err)
	}
	return out, nil
}
