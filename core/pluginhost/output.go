package pluginhost

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// Bounds on what a plugin can make the host log or return. Guest text can
// echo client input (a 4 MB model name in an error message), so none of it
// reaches a log line or an error unbounded.
const (
	maxLogLine         = 1024     // one guest log line (stdout, stderr, mr_v2.log)
	maxStatusMsg       = 512      // a *StatusError's message (and Result.Err)
	maxNeedImagesMsg   = 64 << 10 // a need_images list of URLs (ABI 2.2)
	maxTrapReason      = 256      // the trap line's reason
	maxHeldOutput      = 16 << 10 // guest output held during one call
	trapLinesPerSecond = 20       // trap lines per plugin; the rest are counted
)

const ellipsis = "…"

// cutUTF8 returns the length of the longest prefix of b that is at most n
// bytes and does not end inside a UTF-8 sequence.
func cutUTF8[T ~string | ~[]byte](b T, n int) int {
	if len(b) <= n {
		return len(b)
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(b[i]) {
		i--
	}
	return i
}

// truncate bounds s to n bytes: cut on a UTF-8 boundary with "…" appended
// when it is longer.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:cutUTF8(s, n-len(ellipsis))] + ellipsis
}

// truncateBytes is truncate in place (no allocation: the result is shorter).
func truncateBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return append(b[:cutUTF8(b, n-len(ellipsis))], ellipsis...)
}

// guestOutput is one instance's stdout and stderr. Outside calls
// (_initialize, mr_init) lines go to the plugin's log at once. During a
// call complete lines are held, up to maxHeldOutput bytes, until the call
// ends: a call that returns emits them as plugin output (rate-limited, as
// before); a call that traps folds them into its one trap record (a Go
// runtime's fatal error prints a dozen or more stack lines) and the full
// text goes to debug level only.
type guestOutput struct {
	sink    *logSink
	stdout  lineWriter
	stderr  lineWriter
	holding bool
	held    []byte // per line: the stream's id byte, the line, '\n'
	cut     int    // lines that did not fit in held
}

func newGuestOutput(sink *logSink) *guestOutput {
	o := &guestOutput{sink: sink}
	o.stdout = lineWriter{out: o, id: 'o', level: slog.LevelInfo, stream: "stdout"}
	o.stderr = lineWriter{out: o, id: 'e', level: slog.LevelWarn, stream: "stderr"}
	return o
}

func (o *guestOutput) line(w *lineWriter, line []byte) {
	if !o.holding {
		o.sink.emit(w.level, w.stream, line)
		return
	}
	if len(o.held)+len(line)+2 > maxHeldOutput {
		o.cut++
		return
	}
	o.held = append(o.held, w.id)
	o.held = append(o.held, line...)
	o.held = append(o.held, '\n')
}

// hold starts holding complete lines (a call begins).
func (o *guestOutput) hold() { o.holding = true }

// flush ends a call that did not trap: held lines go out as plugin output.
func (o *guestOutput) flush() {
	o.holding = false
	if len(o.held) == 0 && o.cut == 0 {
		return
	}
	for rest := o.held; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		w := &o.stdout
		if rest[0] == o.stderr.id {
			w = &o.stderr
		}
		o.sink.emit(w.level, w.stream, rest[1:i])
		rest = rest[i+1:]
	}
	o.sink.dropped.Add(uint64(o.cut))
	o.held, o.cut = o.held[:0], 0
}

// take ends a call that trapped and returns everything the guest wrote
// during it, partial last lines included, as "stream: line" text.
func (o *guestOutput) take() string {
	o.holding = false
	var b []byte
	for rest := o.held; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		b = append(b, o.streamOf(rest[0])...)
		b = append(b, ": "...)
		b = append(b, rest[1:i+1]...)
		rest = rest[i+1:]
	}
	for _, w := range []*lineWriter{&o.stdout, &o.stderr} {
		if len(w.buf) > 0 {
			b = append(b, w.stream...)
			b = append(b, ": "...)
			b = append(b, w.buf...)
			b = append(b, '\n')
			w.buf = w.buf[:0]
		}
	}
	if o.cut > 0 {
		b = append(b, "(more output cut)\n"...)
	}
	o.held, o.cut = o.held[:0], 0
	return string(b)
}

func (o *guestOutput) streamOf(id byte) string {
	if id == o.stderr.id {
		return o.stderr.stream
	}
	return o.stdout.stream
}

// trapReason picks what explains a trap: the Go runtime's own words from
// the guest's stderr ("fatal error: out of memory", "panic: ..."), and
// wazero's error (an exit code, "wasm error: unreachable").
func trapReason(output, wasmErr string) string {
	var why []byte
	for rest := output; rest != "" && len(why) < maxTrapReason; {
		line, next, _ := cutLine(rest)
		rest = next
		line = trimStream(line)
		for _, p := range []string{"fatal error:", "panic:", "runtime:", "error:"} {
			if len(line) >= len(p) && line[:len(p)] == p {
				if len(why) > 0 {
					why = append(why, "; "...)
				}
				why = append(why, line...)
				break
			}
		}
	}
	if len(why) > 0 {
		why = append(why, " ("...)
		why = append(why, wasmErr...)
		why = append(why, ')')
		return truncate(string(why), maxTrapReason)
	}
	return truncate(wasmErr, maxTrapReason)
}

func cutLine(s string) (line, rest string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func trimStream(line string) string {
	for _, p := range []string{"stderr: ", "stdout: "} {
		if len(line) >= len(p) && line[:len(p)] == p {
			return line[len(p):]
		}
	}
	return line
}

// lineWriter splits a guest's stdout or stderr into lines of at most
// maxLogLine bytes (longer ones are cut) for its guestOutput. Each
// instance has its own (writes come from one instance at a time).
type lineWriter struct {
	out    *guestOutput
	id     byte
	level  slog.Level
	stream string
	buf    []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := slices.Index(p, '\n')
		if i < 0 {
			w.add(p)
			break
		}
		w.add(p[:i])
		w.out.line(w, truncateBytes(w.buf, maxLogLine))
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// add keeps at most maxLogLine+1 bytes of a line: enough to see that it
// must be cut.
func (w *lineWriter) add(p []byte) {
	if room := maxLogLine + 1 - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(len(p), room)]...)
	}
}

// trapLog writes the one record of a trap, at most trapLinesPerSecond per
// plugin; the traps it did not log are counted in the next record
// ("suppressed") and in the traps metric.
type trapLog struct {
	window     atomic.Int64
	count      atomic.Int32
	suppressed atomic.Int64
}

func (t *trapLog) allow() bool {
	now := time.Now().Unix()
	if w := t.window.Load(); w != now && t.window.CompareAndSwap(w, now) {
		t.count.Store(0)
	}
	if t.count.Add(1) > trapLinesPerSecond {
		t.suppressed.Add(1)
		return false
	}
	return true
}

// logTrap writes a trap's one warning line (plugin, version, op, request
// id, reason of at most maxTrapReason bytes) and, at debug level only, the
// guest's output and wazero's stack trace.
func (v *Version) logTrap(op abi.Op, reqID uint64, reason, output, trace string) {
	lg := v.logger()
	ctx := context.Background()
	if v.plugin.trapLog.allow() {
		attrs := []slog.Attr{slog.String("version", v.manifest.Version), slog.String("op", op.String()),
			reqIDAttr(reqID), slog.String("reason", reason)}
		if n := v.plugin.trapLog.suppressed.Swap(0); n > 0 {
			attrs = append(attrs, slog.Int64("suppressed", n))
		}
		lg.LogAttrs(ctx, slog.LevelWarn, "plugin trapped", attrs...)
	}
	if lg.Enabled(ctx, slog.LevelDebug) {
		lg.LogAttrs(ctx, slog.LevelDebug, "plugin trap detail", slog.String("version", v.manifest.Version),
			slog.String("op", op.String()), reqIDAttr(reqID), slog.String("output", output), slog.String("trace", trace))
	}
}
