// Package logredact keeps secrets out of logs: a slog.Handler wrapper that
// replaces anything shaped like a MindRouter key (mr2_ followed by key
// characters) or a bearer credential in messages and string attributes, and
// Truncate, which bounds client-controlled text before it is logged or
// echoed. The request path never logs keys on purpose; this is the net
// under it (a library's error text can carry raw request bytes).
package logredact

import (
	"context"
	"log/slog"
	"strings"
	"unicode/utf8"
)

// Redacted replaces a secret.
const Redacted = "[redacted]"

// MaxEcho bounds client-supplied text echoed in errors and logs.
const MaxEcho = 256

// Handler wraps h.
func Handler(h slog.Handler) slog.Handler { return &handler{h: h} }

type handler struct{ h slog.Handler }

func (r *handler) Enabled(ctx context.Context, l slog.Level) bool { return r.h.Enabled(ctx, l) }

func (r *handler) Handle(ctx context.Context, rec slog.Record) error {
	if !needs(rec.Message) && !recordNeeds(rec) {
		return r.h.Handle(ctx, rec)
	}
	out := slog.NewRecord(rec.Time, rec.Level, String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r *handler) WithAttrs(as []slog.Attr) slog.Handler {
	cp := make([]slog.Attr, len(as))
	for i, a := range as {
		cp[i] = attr(a)
	}
	return &handler{h: r.h.WithAttrs(cp)}
}

func (r *handler) WithGroup(name string) slog.Handler { return &handler{h: r.h.WithGroup(name)} }

func recordNeeds(rec slog.Record) bool {
	found := false
	rec.Attrs(func(a slog.Attr) bool {
		found = attrNeeds(a)
		return !found
	})
	return found
}

func attrNeeds(a slog.Attr) bool {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return needs(v.String())
	case slog.KindGroup:
		for _, g := range v.Group() {
			if attrNeeds(g) {
				return true
			}
		}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return needs(err.Error())
		}
		return true // unknown values are formatted: redact their text
	}
	return false
}

func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		cp := make([]slog.Attr, len(g))
		for i, x := range g {
			cp[i] = attr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(cp...)}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, String(err.Error()))
		}
		if lv, ok := v.Any().(slog.LogValuer); ok {
			return attr(slog.Any(a.Key, lv.LogValue()))
		}
		s := v.String()
		if needs(s) {
			return slog.String(a.Key, String(s))
		}
	}
	return a
}

func needs(s string) bool {
	return strings.Contains(s, "mr2_") || containsFold(s, "bearer ") || containsFold(s, "api-key") || containsFold(s, "key=")
}

// queryKey reports whether s[i:] starts a query parameter named "key"
// (Google's ?key=, a credential routes may declare: ABI 2.8) or
// "api-key"/"api_key", returning the length of the name and "=".
func queryKey(s string, i int) int {
	if i == 0 || s[i-1] != '?' && s[i-1] != '&' {
		return 0
	}
	for _, name := range [...]string{"key=", "api-key=", "api_key="} {
		if i+len(name) <= len(s) && strings.EqualFold(s[i:i+len(name)], name) {
			return len(name)
		}
	}
	return 0
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// String returns s with every mr2_ key, every value after "Bearer ",
// every X-API-Key (and x-goog-api-key, api-key) header value and every
// key, api-key or api_key query parameter replaced by Redacted.
func String(s string) string {
	if !needs(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "mr2_"):
			b.WriteString(Redacted)
			i = skipToken(s, i+4)
		case i+7 <= len(s) && strings.EqualFold(s[i:i+7], "bearer "):
			b.WriteString(s[i : i+7])
			b.WriteString(Redacted)
			i = skipToken(s, i+7)
		case queryKey(s, i) > 0:
			n := queryKey(s, i)
			b.WriteString(s[i : i+n])
			b.WriteString(Redacted)
			i = skipQueryValue(s, i+n)
		case i+8 <= len(s) && strings.EqualFold(s[i:i+8], "api-key:"):
			b.WriteString(s[i : i+8])
			j := i + 8
			for j < len(s) && s[j] == ' ' {
				j++
			}
			b.WriteString(" " + Redacted)
			i = skipToken(s, j)
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// skipQueryValue returns the index after the query value starting at i.
func skipQueryValue(s string, i int) int {
	for i < len(s) && s[i] != '&' && s[i] != ' ' && s[i] != '"' && s[i] != '#' {
		i++
	}
	return i
}

// skipToken returns the index after the key-like run starting at i.
func skipToken(s string, i int) int {
	for i < len(s) {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '~' || c == '+' || c == '/' || c == '=' {
			i++
			continue
		}
		break
	}
	return i
}

// Truncate bounds s to max bytes (on a UTF-8 boundary), marking the cut.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + itoa(len(s)-cut) + " more bytes)"
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
