package testutil

import (
	"bytes"
	"context"
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

// SecretScanner is an io.Writer that keeps nothing but counts the writes
// containing any of its secrets (with or without their first four
// characters), for a check over every log line a whole test binary
// writes: hand RunLogger's loggers to every component under test and
// call Leaks from TestMain after m.Run.
type SecretScanner struct {
	needles [][]byte
	mu      sync.Mutex
	leaks   []string
	writes  int
}

// NewSecretScanner watches for secrets.
func NewSecretScanner(secrets ...string) *SecretScanner {
	s := &SecretScanner{}
	for _, sec := range secrets {
		s.needles = append(s.needles, []byte(sec))
		if len(sec) > 12 {
			s.needles = append(s.needles, []byte(sec[4:]))
		}
	}
	return s
}

func (s *SecretScanner) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	for _, n := range s.needles {
		if bytes.Contains(p, n) {
			line := string(p)
			if len(line) > 300 {
				line = line[:300] + "…"
			}
			s.leaks = append(s.leaks, line)
			break
		}
	}
	return len(p), nil
}

// Logger returns a debug-level JSON logger writing into s (the most
// verbose level, so any line that could carry a secret is written).
func (s *SecretScanner) Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Leaks returns the lines that contained a secret and how many lines were
// scanned.
func (s *SecretScanner) Leaks() (leaks []string, scanned int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.leaks...), s.writes
}

// Tee returns a logger writing to both l's handler and s at debug level.
func (s *SecretScanner) Tee(l *slog.Logger) *slog.Logger {
	return slog.New(teeHandler{l.Handler(), s.Logger().Handler()})
}

type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	if t.a.Enabled(ctx, r.Level) {
		_ = t.a.Handle(ctx, r.Clone())
	}
	if t.b.Enabled(ctx, r.Level) {
		return t.b.Handle(ctx, r)
	}
	return nil
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t teeHandler) WithGroup(n string) slog.Handler {
	return teeHandler{t.a.WithGroup(n), t.b.WithGroup(n)}
}
