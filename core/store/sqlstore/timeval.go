package sqlstore

import (
	"fmt"
	"time"
)

// timeLayout is how both dialects receive times: UTC, fixed width, to the
// microsecond. MySQL reads it into DATETIME(6); SQLite keeps it as TEXT,
// where the fixed width makes text order time order (MAX and < work).
const timeLayout = "2006-01-02 15:04:05.000000"

// now is the current time as the store keeps it.
func now() time.Time { return norm(time.Now()) }

// norm is t as it reads back: UTC, truncated to the microsecond.
func norm(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// tv is a time argument.
func tv(t time.Time) string { return t.UTC().Format(timeLayout) }

// ntv is a nullable time argument.
func ntv(t *time.Time) any {
	if t == nil {
		return nil
	}
	return tv(*t)
}

// normp normalises a nullable time in place.
func normp(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := norm(*t)
	return &n
}

// timeDest scans a NOT NULL time column: time.Time from MySQL (parseTime),
// text from SQLite.
type timeDest struct{ t *time.Time }

func (d timeDest) Scan(src any) error {
	t, err := parseTimeValue(src)
	if err != nil {
		return err
	}
	if t == nil {
		return fmt.Errorf("sqlstore: NULL in a NOT NULL time column")
	}
	*d.t = *t
	return nil
}

// nullTimeDest scans a nullable time column.
type nullTimeDest struct{ t **time.Time }

func (d nullTimeDest) Scan(src any) error {
	t, err := parseTimeValue(src)
	if err != nil {
		return err
	}
	*d.t = t
	return nil
}

func parseTimeValue(src any) (*time.Time, error) {
	var s string
	switch v := src.(type) {
	case nil:
		return nil, nil
	case time.Time:
		t := norm(v)
		return &t, nil
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		return nil, fmt.Errorf("sqlstore: cannot read %T as a time", src)
	}
	t, err := time.ParseInLocation(timeLayout, s, time.UTC)
	if err != nil {
		// Written by something else (a hand edit): accept RFC 3339 too.
		t, err = time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: read time %q: %w", s, err)
		}
	}
	t = norm(t)
	return &t, nil
}
