package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mindrouter/mindrouter/core/logredact"
)

// decode reads body, a JSON object, into v strictly: unknown fields, wrong
// types and trailing data are 400s naming the field. It returns the
// object's member names, sorted (a PATCH needs at least one; the audit
// detail lists them).
func decode(body []byte, v any) (members []string, err error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, badRequest("body: expected a JSON object")
	}
	// The probe also refuses trailing data after the object.
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(body, &probe); err != nil {
		return nil, decodeError(err)
	}
	if probe == nil {
		return nil, badRequest("body: expected a JSON object, got null")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return nil, decodeError(err)
	}
	members = slices.Sorted(maps.Keys(probe))
	return members, nil
}

// decodeError names the field at fault. What it quotes of the body is
// bounded and passed through the key redactor: it goes back to the
// caller, and a pasted key should not come back in an error.
func decodeError(err error) error {
	return badRequest(logredact.String(logredact.Truncate(decodeDetail(err), logredact.MaxEcho)))
}

func decodeDetail(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("body is not valid JSON: %s at offset %d", syn.Error(), syn.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "body is not valid JSON: unexpected end"
	case errors.As(err, &typ):
		if typ.Field == "" {
			return "body: expected a JSON object, got " + typ.Value
		}
		return fmt.Sprintf("field %s: expected %s, got %s", typ.Field, kind(typ.Type), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "field " + strings.TrimPrefix(err.Error(), "json: unknown field ") + ": unknown field"
	}
	return "body: " + err.Error()
}

func kind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array"
	}
	return "a " + t.Kind().String()
}

// nullable is a PATCH field where null means "clear": Set says it was
// present, Null that it was null.
type nullable[T any] struct {
	Set  bool
	Null bool
	V    T
}

// UnmarshalJSON implements json.Unmarshaler; it is called for null too.
func (n *nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if string(b) == "null" {
		n.Null = true
		return nil
	}
	return json.Unmarshal(b, &n.V)
}

// ptr returns nil for null, else a pointer to the value.
func (n nullable[T]) ptr() *T {
	if n.Null {
		return nil
	}
	v := n.V
	return &v
}

// Field checks. Each returns a 400 naming the field.

func checkText(field, s string, min, max int) error {
	if strings.TrimSpace(s) == "" && min > 0 {
		return badRequest("field " + field + ": must not be empty")
	}
	if len(s) > max {
		return badRequest(fmt.Sprintf("field %s: longer than %d bytes", field, max))
	}
	if len(s) < min {
		return badRequest(fmt.Sprintf("field %s: shorter than %d characters", field, min))
	}
	if !utf8.ValidString(s) {
		return badRequest("field " + field + ": not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return badRequest("field " + field + ": control characters are not allowed")
		}
	}
	return nil
}

// checkName is checkText for identifiers people type: no spaces either.
func checkName(field, s string, max int) error {
	if err := checkText(field, s, 1, max); err != nil {
		return err
	}
	if strings.ContainsFunc(s, unicode.IsSpace) {
		return badRequest("field " + field + ": must not contain spaces")
	}
	return nil
}

func checkRange[T int | int64 | float64](field string, v, min, max T) error {
	if v < min || v > max {
		return badRequest(fmt.Sprintf("field %s: must be between %v and %v", field, min, max))
	}
	return nil
}

// parseTime reads an RFC 3339 time ("2027-01-31T00:00:00Z").
func parseTime(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, badRequest("field " + field + ": expected an RFC 3339 time such as 2027-01-31T00:00:00Z")
	}
	return t.UTC(), nil
}

// Query parameters.

type page struct{ skip, limit int }

func (c *call) page() (page, error) {
	p := page{limit: 100}
	var err error
	if p.skip, err = c.queryInt("skip", 0, 0, 1<<30); err != nil {
		return p, err
	}
	p.limit, err = c.queryInt("limit", 100, 1, 1000)
	return p, err
}

func (c *call) queryInt(name string, def, min, max int) (int, error) {
	s := c.req.Query.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < min || n > max {
		return 0, badRequest(fmt.Sprintf("query parameter %s: must be an integer between %d and %d", name, min, max))
	}
	return n, nil
}

func (c *call) queryID(name string) (int64, error) {
	s := c.req.Query.Get(name)
	if s == "" {
		return 0, nil
	}
	id, ok := parseID(s)
	if !ok {
		return 0, badRequest("query parameter " + name + ": must be a positive integer")
	}
	return id, nil
}

func (c *call) queryText(name string, max int) (string, error) {
	s := c.req.Query.Get(name)
	if len(s) > max {
		return "", badRequest(fmt.Sprintf("query parameter %s: longer than %d bytes", name, max))
	}
	return s, nil
}
