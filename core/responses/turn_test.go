package responses

import (
	"bytes"
	"strings"
	"testing"
)

// terminalData is the data line of s's terminal event.
func terminalData(t *testing.T, s string) string {
	t.Helper()
	i := strings.LastIndex(s, "\ndata: ")
	if i < 0 {
		t.Fatal("no data line")
	}
	return strings.TrimSuffix(s[i+len("\ndata: "):], "\n\n")
}

// The terminal event is found once, whole, however the stream is split:
// at every byte for one cut, byte by byte, with CRLF line ends and with
// no event: lines.
func TestSSEScan_EverySplit(t *testing.T) {
	base := stream("resp_1", "response.completed", "one two three")
	for _, tc := range []struct{ name, s string }{
		{"lf", base},
		{"crlf", strings.ReplaceAll(base, "\n", "\r\n")},
		{"no event lines", dropEventLines(base)},
		{"incomplete", stream("resp_1", "response.incomplete", "cut")},
		{"failed", stream("resp_1", "response.failed", "")},
	} {
		want := terminalData(t, strings.ReplaceAll(tc.s, "\r\n", "\n"))
		for cut := 0; cut <= len(tc.s); cut++ {
			s := sseScan{max: 1 << 20}
			var found []string
			for _, part := range []string{tc.s[:cut], tc.s[cut:]} {
				if data, ok := s.feed([]byte(part)); ok {
					found = append(found, string(data))
				}
			}
			if len(found) != 1 || found[0] != want {
				t.Fatalf("%s cut at %d: found %q, want once %q", tc.name, cut, found, want)
			}
		}
		s := sseScan{max: 1 << 20}
		var found []string
		for i := range len(tc.s) {
			if data, ok := s.feed([]byte{tc.s[i]}); ok {
				found = append(found, string(data))
			}
		}
		if len(found) != 1 || found[0] != want {
			t.Fatalf("%s byte by byte: found %q", tc.name, found)
		}
	}
}

func dropEventLines(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(line, "event:") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// Deltas are skipped, not kept: a delta far over the line bound costs
// nothing and the terminal event after it is still found; a terminal
// event over the bound is dropped, not cut.
func TestSSEScan_Bounded(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	s := sseScan{max: 64 << 10}
	in := "event: response.output_text.delta\ndata: {\"delta\":\"" + huge + "\"}\n\n" +
		stream("resp_1", "response.completed", "short")
	var found int
	for chunk := range slicesOf([]byte(in), 4096) {
		if _, ok := s.feed(chunk); ok {
			found++
		}
		if cap(s.line) > 64<<10 || cap(s.data) > 64<<10 {
			t.Fatalf("buffers grew to %d/%d bytes", cap(s.line), cap(s.data))
		}
	}
	if found != 1 {
		t.Errorf("terminal events found: %d", found)
	}

	s = sseScan{max: 64 << 10}
	long := stream("resp_2", "response.completed", huge)
	if _, ok := s.feed([]byte(long)); ok {
		t.Error("a terminal event over the bound was taken")
	}
	if cap(s.line) > 64<<10 {
		t.Errorf("line buffer grew to %d bytes", cap(s.line))
	}
}

func slicesOf(b []byte, n int) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) > 0 {
			k := min(n, len(b))
			if !yield(b[:k]) {
				return
			}
			b = b[k:]
		}
	}
}

// A Turn given a stream in pieces stores at the terminal event, once.
func TestTurn_StreamStoresAtTerminal(t *testing.T) {
	e := newEnv(t)
	_, turn, id := e.begin(alice, `{"model":"m","stream":true,"input":"hi"}`)
	s := []byte(stream(id, "response.completed", "hello there"))
	end := bytes.LastIndex(s, []byte("\n\n"))
	turn.Write(s[:end+1]) // all but the last newline: the event is not over
	e.fails(alice, "GET", "/v1/responses/"+id, "", 404)
	turn.Write(s[end+1:])
	e.ok(alice, "GET", "/v1/responses/"+id, "", nil)
	turn.Write([]byte("event: response.completed\ndata: {}\n\n")) // after the end: ignored
	turn.End(200)
}
