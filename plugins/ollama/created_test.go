package ollama

import "testing"

func TestParseCreated(t *testing.T) {
	for s, want := range map[string]int64{
		"2023-12-12T14:13:43.416799Z":         1702390423,
		"2025-05-29T09:35:56.836222-07:00":    1748536556,
		"2024-02-29T23:59:59+05:30":           1709231399,
		"1970-01-01T00:00:00Z":                0,
		"0001-01-01T00:00:00Z":                -62135596800,
		"2025-10-26T17:15:24.123456789Z":      1761498924,
		"2025-10-26t17:15:24Z":                0, // time.Parse rejects a lower-case t too
		"2023-02-29T00:00:00Z":                0,
		"2025-13-01T00:00:00Z":                0,
		"2025-10-26T17:15:24.Z":               0,
		"2025-10-26T17:15:24":                 0,
		"":                                    0,
		"2025-10-26T17:15:24.1234567890Z":     1761498924, // via time.Parse
		"2025-10-26T17:15:24.123+00:00 extra": 0,
	} {
		if got := parseCreated([]byte(s)); got != want {
			t.Errorf("parseCreated(%q) = %d, want %d", s, got, want)
		}
	}
}
