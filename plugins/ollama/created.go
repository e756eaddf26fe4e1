package ollama

import "time"

// parseCreated turns Ollama's created_at (RFC 3339 with nanoseconds) into
// unix seconds; 0 when absent or malformed. It runs once per stream line, so
// Ollama's usual form is read directly and anything else goes to time.Parse.
func parseCreated(s []byte) int64 {
	if len(s) == 0 {
		return 0
	}
	if t, ok := parseRFC3339(s); ok {
		return t
	}
	t, err := time.Parse(time.RFC3339Nano, string(s))
	if err != nil {
		return 0
	}
	return t.Unix()
}

// parseRFC3339 reads YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM).
func parseRFC3339(s []byte) (int64, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return 0, false
	}
	year, month, day := digits(s[0:4]), digits(s[5:7]), digits(s[8:10])
	hour, minute, sec := digits(s[11:13]), digits(s[14:16]), digits(s[17:19])
	if year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return 0, false
	}
	i := 19
	if s[i] == '.' {
		j := i + 1
		for i = j; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		}
		if i == j || i-j > 9 {
			return 0, false
		}
	}
	var offset int64
	switch rest := s[i:]; {
	case len(rest) == 1 && rest[0] == 'Z':
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, om := digits(rest[1:3]), digits(rest[4:6])
		if oh < 0 || oh > 23 || om < 0 || om > 59 {
			return 0, false
		}
		offset = oh*3600 + om*60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return 0, false
	}
	return daysSinceEpoch(year, month, day)*86400 + hour*3600 + minute*60 + sec - offset, true
}

// digits parses ASCII decimal digits; -1 if any byte is not one.
func digits(b []byte) int64 {
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

func daysIn(month, year int64) int64 {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysSinceEpoch is the number of days from 1970-01-01 to the given date of
// the proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
func daysSinceEpoch(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
