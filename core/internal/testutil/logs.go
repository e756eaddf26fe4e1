package testutil

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// LogBuffer collects log output. It is safe for concurrent writers: slog's
// handlers write each record with one Write call, so records never
// interleave.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Mark returns a position; LinesSince(mark) returns the lines written
// after it.
func (b *LogBuffer) Mark() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// Lines returns every complete line written so far.
func (b *LogBuffer) Lines() []string { return b.LinesSince(0) }

// LinesSince returns the complete lines written after mark.
func (b *LogBuffer) LinesSince(mark int) []string {
	b.mu.Lock()
	s := string(b.buf.Bytes()[mark:])
	b.mu.Unlock()
	var lines []string
	for line := range strings.SplitSeq(s, "\n") {
		if line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// CaptureLogger returns a logger that writes JSON records at level and
// above into the returned buffer.
func CaptureLogger(level slog.Leveler) (*slog.Logger, *LogBuffer) {
	b := &LogBuffer{}
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: level})), b
}

// AssertNoSecret fails t for each secret that appears in the log, also
// without its first four characters (a prefix such as "mr2_" a redactor
// or a truncation may have cut off), and quotes the offending lines.
func AssertNoSecret(t testing.TB, logs *LogBuffer, secrets ...string) {
	t.Helper()
	for _, secret := range secrets {
		needles := []string{secret}
		if len(secret) > 12 {
			needles = append(needles, secret[4:])
		}
		for _, line := range logs.Lines() {
			for _, n := range needles {
				if strings.Contains(line, n) {
					if len(line) > 600 {
						line = line[:600] + "..."
					}
					t.Errorf("secret %q appears in the log: %s", n, line)
					break
				}
			}
		}
	}
}
