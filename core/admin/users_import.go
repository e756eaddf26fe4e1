package admin

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/store"
)

// Bulk import of users from CSV: POST /api/admin/users/import[?dry_run=1].
//
// The body is CSV (RFC 4180, comma-separated, UTF-8, an optional BOM) whose
// first row names the columns: username, email and group are required,
// full_name, is_active, token_budget_override, rpm_limit_override,
// max_concurrent_override, weight_override and model_access (patterns
// separated by spaces or semicolons) optional; an empty cell leaves the
// field at its default (the group's value for an override).
//
// All or nothing: every line is checked first (the fields as POST /users
// checks them, the group by name, the username free in the store and not
// repeated in the file). If any line is refused nothing is created and the
// answer is a 400 naming the first refusals; a dry run answers 200 with
// every line's result and creates nothing either way. Without refusals
// each user is created in file order. The store has no transaction over
// many users, so a create that fails even so (a namesake created meanwhile
// by someone else, the store going away) stops the import there: the
// answer (200, complete false; a 503 or 500 if the store failed before
// any user was created) lists what was created before it (status
// "created"), the line that failed ("refused") and what was not
// ("not_created"); a dry run of the same file then refuses the created
// lines as existing, so the rest can be re-imported.

// maxImportLines bounds the lines of one import (the admin body limit,
// limits.admin.max_body_bytes, bounds its bytes).
const maxImportLines = 10000

var importColumns = map[string]bool{
	"username": true, "email": true, "group": true, "full_name": true, "is_active": true,
	"token_budget_override": true, "rpm_limit_override": true, "max_concurrent_override": true,
	"weight_override": true, "model_access": true,
}

// importLine is one line's result.
type importLine struct {
	Line     int    `json:"line"` // in the file, the header being line 1
	Username string `json:"username"`
	// Status: "ok" (a dry run: would be created), "created", "refused"
	// (Error says why), "not_created" (the import stopped before it).
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	UserID int64  `json:"user_id,omitempty"`
	Group  string `json:"group,omitempty"`
}

type importAnswer struct {
	DryRun  bool         `json:"dry_run"`
	Lines   []importLine `json:"lines"`
	Total   int          `json:"total"`
	Valid   int          `json:"valid"`
	Refused int          `json:"refused"`
	Created int          `json:"created"`
	// Complete is false when an import stopped part-way (see above).
	Complete bool `json:"complete"`
}

func (h *Handler) importUsers(c *call) (any, error) {
	dry := false
	switch v := c.req.Query.Get("dry_run"); strings.ToLower(v) {
	case "", "0", "false", "no":
	case "1", "true", "yes":
		dry = true
	default:
		return nil, badRequest("query parameter dry_run: must be 1 or 0 (true or false)")
	}
	header, records, err := readImportCSV(c.req.Body)
	if err != nil {
		return nil, err
	}
	ans := importAnswer{DryRun: dry, Lines: make([]importLine, 0, len(records)), Total: len(records)}
	users := make([]store.User, len(records))
	groups := map[string]store.Group{}
	seen := map[string]int{} // lower-cased username → line
	for i, rec := range records {
		line := importLine{Line: rec.line}
		row := map[string]string{}
		for j, name := range header {
			row[name] = strings.TrimSpace(rec.fields[j])
		}
		line.Username, line.Group = row["username"], row["group"]
		u, err := h.importUser(c, row, groups)
		if err == nil {
			key := strings.ToLower(u.Username)
			if first, dup := seen[key]; dup {
				err = badRequest(fmt.Sprintf("username %q repeats line %d", u.Username, first))
			} else {
				seen[key] = rec.line
				err = h.usernameFree(c, u.Username)
			}
		}
		var ae *apiError
		switch {
		case errors.As(err, &ae):
			line.Status, line.Error = "refused", ae.Detail
			ans.Refused++
		case err != nil:
			return nil, err // the store: a 503 or 500, nothing created
		default:
			line.Status = "ok"
			ans.Valid++
			users[i] = u
		}
		ans.Lines = append(ans.Lines, line)
	}
	if dry {
		return ans, nil
	}
	if ans.Refused > 0 {
		var first []string
		for _, l := range ans.Lines {
			if l.Status == "refused" && len(first) < 3 {
				first = append(first, fmt.Sprintf("line %d: %s", l.Line, l.Error))
			}
		}
		more := ""
		if ans.Refused > len(first) {
			more = fmt.Sprintf(" (and %d more)", ans.Refused-len(first))
		}
		return nil, badRequest(fmt.Sprintf("%d of %d lines refused, nothing was created: %s%s; POST with dry_run=1 for every line's result",
			ans.Refused, ans.Total, strings.Join(first, "; "), more))
	}
	var stop error
	ans.Complete = true
	for i := range ans.Lines {
		l := &ans.Lines[i]
		if stop != nil {
			l.Status = "not_created"
			continue
		}
		u := users[i]
		if err := h.st.CreateUser(c.ctx, &u); err != nil {
			stop = err
			l.Status = "refused"
			if errors.Is(err, store.ErrConflict) {
				l.Error = fmt.Sprintf("Username '%s' already exists", u.Username)
			} else {
				l.Error = "the store failed; the import stopped here"
			}
			continue
		}
		l.Status, l.UserID = "created", u.ID
		ans.Created++
		h.record(c, "user.create", "user", u.ID, map[string]any{"after": viewUser(u, l.Group), "import_line": l.Line})
	}
	ans.Valid = ans.Created
	if stop != nil {
		ans.Complete, ans.Refused = false, 1
		h.log.LogAttrs(c.ctx, slog.LevelWarn, "user import stopped", slog.Int("created", ans.Created), slog.String("err", stop.Error()))
		if ans.Created == 0 && !errors.Is(stop, store.ErrConflict) {
			return nil, fmt.Errorf("import users: %w", stop)
		}
	}
	h.record(c, "user.import", "user", 0, map[string]any{"lines": ans.Total, "created": ans.Created, "complete": ans.Complete})
	return ans, nil
}

// importUser builds the user of one line, checked as POST /users checks
// its body; groups caches the groups by name.
func (h *Handler) importUser(c *call, row map[string]string, groups map[string]store.Group) (store.User, error) {
	u := store.User{Active: true}
	for _, f := range []string{"username", "email", "group"} {
		if row[f] == "" {
			return u, badRequest("column " + f + ": required")
		}
	}
	name, email, full := row["username"], row["email"], row["full_name"]
	in := userIn{Username: &name, Email: &email}
	if full != "" {
		in.FullName = &full
	}
	if s := row["is_active"]; s != "" {
		b, ok := parseBool(s)
		if !ok {
			return u, badRequest("column is_active: must be true or false")
		}
		in.IsActive = &b
	}
	var err error
	if in.TokenBudgetOverride, err = csvNumber[int64]("token_budget_override", row); err != nil {
		return u, err
	}
	if in.RPMOverride, err = csvNumber[int]("rpm_limit_override", row); err != nil {
		return u, err
	}
	if in.MaxConcurrentOverride, err = csvNumber[int]("max_concurrent_override", row); err != nil {
		return u, err
	}
	if in.WeightOverride, err = csvNumber[float64]("weight_override", row); err != nil {
		return u, err
	}
	if s := row["model_access"]; s != "" {
		in.ModelAccess = nullable[[]string]{Set: true, V: strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ';' })}
	}
	g, ok := groups[row["group"]]
	if !ok {
		gname := row["group"]
		if g, err = h.groupRef(c, nil, &gname); err != nil {
			var ae *apiError
			if errors.As(err, &ae) {
				return u, badRequest(fmt.Sprintf("column group: group %q not found", logredact.Truncate(gname, 100)))
			}
			return u, err
		}
		groups[gname] = g
	}
	if err := h.applyUser(c, &in, &u); err != nil {
		return u, err
	}
	u.GroupID = g.ID
	return u, nil
}

func (h *Handler) usernameFree(c *call, name string) error {
	_, err := h.st.UserByName(c.ctx, name)
	switch {
	case err == nil:
		return conflict(fmt.Sprintf("Username '%s' already exists", name))
	case errors.Is(err, store.ErrNotFound):
		return nil
	}
	return fmt.Errorf("look up user %q: %w", name, err)
}

func csvNumber[T int | int64 | float64](col string, row map[string]string) (nullable[T], error) {
	s := row[col]
	if s == "" {
		return nullable[T]{}, nil
	}
	var v T
	var err error
	switch p := any(&v).(type) {
	case *int:
		*p, err = strconv.Atoi(s)
	case *int64:
		*p, err = strconv.ParseInt(s, 10, 64)
	case *float64:
		*p, err = strconv.ParseFloat(s, 64)
	}
	if err != nil {
		return nullable[T]{}, badRequest("column " + col + ": not a number")
	}
	return nullable[T]{Set: true, V: v}, nil
}

func parseBool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "1", "true", "yes", "y":
		return true, true
	case "0", "false", "no", "n":
		return false, true
	}
	return false, false
}

type csvRecord struct {
	line   int
	fields []string
}

// readImportCSV parses the body: the header's column names (lower-cased,
// checked) and the records after it, blank lines skipped.
func readImportCSV(body []byte) ([]string, []csvRecord, error) {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil, badRequest("body: expected CSV with a header row (username,email,group,…)")
	}
	if !utf8.Valid(body) {
		return nil, nil, badRequest("body: CSV must be UTF-8")
	}
	r := csv.NewReader(bytes.NewReader(body))
	r.FieldsPerRecord = 0 // every row as wide as the header
	header, err := r.Read()
	if err != nil {
		return nil, nil, csvError(err)
	}
	cols := map[string]bool{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		if !importColumns[h] {
			return nil, nil, badRequest(fmt.Sprintf("header: unknown column %q (username, email, group, full_name, is_active, token_budget_override, rpm_limit_override, max_concurrent_override, weight_override, model_access)",
				logredact.Truncate(h, 60)))
		}
		if cols[h] {
			return nil, nil, badRequest(fmt.Sprintf("header: column %q twice", h))
		}
		cols[h], header[i] = true, h
	}
	for _, need := range []string{"username", "email", "group"} {
		if !cols[need] {
			return nil, nil, badRequest("header: column " + need + " is required")
		}
	}
	var out []csvRecord
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, csvError(err)
		}
		if len(out) == maxImportLines {
			return nil, nil, badRequest(fmt.Sprintf("body: more than %d users; split the file", maxImportLines))
		}
		line, _ := r.FieldPos(0)
		out = append(out, csvRecord{line: line, fields: rec})
	}
	if len(out) == 0 {
		return nil, nil, badRequest("body: no users after the header row")
	}
	return header, out, nil
}

func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return badRequest(fmt.Sprintf("body: CSV line %d: %v", pe.StartLine, pe.Err))
	}
	return badRequest("body: not CSV: " + err.Error())
}
