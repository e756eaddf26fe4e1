package pluginhost

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// recorder is a slog handler that keeps every record with its attributes
// (those added by Logger.With included).
type recorder struct {
	mu    *sync.Mutex
	recs  *[]rec
	attrs []slog.Attr
}

type rec struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func newRecorder() *recorder { return &recorder{mu: new(sync.Mutex), recs: new([]rec)} }

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &recorder{mu: r.mu, recs: r.recs, attrs: append(append([]slog.Attr(nil), r.attrs...), as...)}
}
func (r *recorder) Handle(_ context.Context, record slog.Record) error {
	m := map[string]string{}
	for _, a := range r.attrs {
		m[a.Key] = a.Value.String()
	}
	record.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	*r.recs = append(*r.recs, rec{record.Level, record.Message, m})
	r.mu.Unlock()
	return nil
}

// since returns the records from index i on.
func (r *recorder) since(i int) []rec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rec(nil), (*r.recs)[i:]...)
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(*r.recs)
}

// TestTrap_OneLogLine: a trap writes exactly one line at info level or
// above — plugin, version, op, request id and a bounded reason — and the
// guest's runtime output (a dozen stack lines) at debug level only.
func TestTrap_OneLogLine(t *testing.T) {
	for _, body := range []string{"trap", "oom"} {
		t.Run(body, func(t *testing.T) {
			r := newRecorder()
			pc := plugin("bad", "bad", "translator", ModeTrusted)
			cfg := &Config{ABI: abi.VersionMajor, CacheDir: cacheDir, Plugins: []PluginConfig{pc}}
			h, err := New(context.Background(), cfg, testDir, slog.New(r))
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close(context.Background())
			// Filling 64 MiB can take seconds under -race: keep the stuck-call
			// watchdog's line (a different event) out of the count.
			h.timekeeper.min.Store(int64(time.Minute))
			p := h.Plugin("bad")
			mark := r.len()
			in := decode(body)
			in.RequestID = 0xabc
			var out Result
			if err := p.Call(context.Background(), abi.OpRequestDecode, in, &out); !errors.Is(err, ErrTrap) {
				t.Fatalf("err %v, want ErrTrap", err)
			}
			v := p.Pin()
			waitFor(t, "replacement", func() bool { return v.Stats().Idle == 1 })
			v.Release()
			var loud, debug []rec
			for _, x := range r.since(mark) {
				if x.level >= slog.LevelInfo {
					loud = append(loud, x)
				} else {
					debug = append(debug, x)
				}
			}
			for _, x := range loud {
				t.Logf("%s %q %v", x.level, x.msg, x.attrs)
			}
			if len(loud) != 1 {
				t.Fatalf("%d lines at info or above for one trap, want 1", len(loud))
			}
			x := loud[0]
			if x.level < slog.LevelWarn || x.msg != "plugin trapped" {
				t.Errorf("line %s %q, want a warning \"plugin trapped\"", x.level, x.msg)
			}
			want := map[string]string{"plugin": "bad", "version": "1", "op": "request_decode", "req_id": "0000000000000abc"}
			for k, w := range want {
				if x.attrs[k] != w {
					t.Errorf("%s=%q, want %q", k, x.attrs[k], w)
				}
			}
			reason := x.attrs["reason"]
			if reason == "" || len(reason) > maxTrapReason || !strings.Contains(reason, "fatal error") {
				t.Errorf("reason %q (%d B): want the runtime's fatal error, at most %d B", reason, len(reason), maxTrapReason)
			}
			if len(debug) != 1 || !strings.Contains(debug[0].attrs["output"], "goroutine 1") || debug[0].attrs["trace"] == "" {
				t.Errorf("debug records %v, want one with the guest output and the wasm trace", debug)
			}
		})
	}
}

// TestTrap_LogRateLimited: a flood of traps writes at most
// trapLinesPerSecond lines per second; the next line counts the rest.
func TestTrap_LogRateLimited(t *testing.T) {
	var tl trapLog
	const tries = 3 * trapLinesPerSecond
	n := 0
	for range tries {
		if tl.allow() {
			n++
		}
	}
	// At most two one-second windows: this loop may straddle a second.
	if n > 2*trapLinesPerSecond || int(tl.suppressed.Load()) != tries-n {
		t.Errorf("%d of %d trap lines allowed, %d suppressed", n, tries, tl.suppressed.Load())
	}
}

func TestGuestLogLine_Bounded(t *testing.T) {
	r := newRecorder()
	var dropped atomic.Uint64
	o := newGuestOutput(newLogSink(slog.New(r), &dropped))
	long := strings.Repeat("é", 4<<10) // 8 KiB, 2-byte runes
	for _, held := range []bool{false, true} {
		mark := r.len()
		if held {
			o.hold()
		}
		o.stderr.Write([]byte(long[:4097] + "\nok\n"))
		if held {
			o.flush()
		}
		got := r.since(mark)
		if len(got) != 2 {
			t.Fatalf("held %v: %d records, want 2", held, len(got))
		}
		line := got[0].attrs["line"]
		if len(line) > maxLogLine || !strings.HasSuffix(line, ellipsis) || !utf8.ValidString(line) {
			t.Errorf("held %v: line of %d B, suffix %q, valid UTF-8 %v", held, len(line), line[len(line)-4:], utf8.ValidString(line))
		}
	}
	mark := r.len()
	o.sink.emit(slog.LevelInfo, "log", []byte(long))
	if line := r.since(mark)[0].attrs["line"]; len(line) > maxLogLine || !strings.HasSuffix(line, ellipsis) || !utf8.ValidString(line) {
		t.Errorf("mr_v2.log line of %d B", len(line))
	}
}

func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789ab", 10, "0123456…"},
		{"ééééé", 8, "éé…"},  // 10 B: cut to 5, back to a rune start at 4
		{"aéééé", 8, "aéé…"}, // cut at 5 is a rune start
		{"\xff\xff\xff\xff\xff\xff\xff\xff\xff", 8, "\xff\xff\xff\xff\xff…"},
	} {
		if got := truncate(tt.in, tt.n); got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
		if got := string(truncateBytes([]byte(tt.in), tt.n)); got != tt.want {
			t.Errorf("truncateBytes(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
