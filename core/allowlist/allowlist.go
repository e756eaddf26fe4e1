// Package allowlist decides which models a caller may use. A List is a set
// of patterns, each a model name in which "*" stands for any run of
// characters ("/" and ":" included, so "openai/*" and "llama3*" cover
// "openai/gpt-oss-20b" and "llama3.1:8b") and "?" for one character.
// Matching ignores ASCII case, and "name" and "name:latest" are one model,
// as everywhere else in the gateway.
//
// An empty or nil List allows every model. A List is immutable once
// compiled and safe for concurrent use; it travels with the caller's
// principal, which every replica builds from the store.
package allowlist

import (
	"fmt"
	"strings"
)

// Bounds on what an administrator may store.
const (
	MaxPatterns   = 256
	MaxPatternLen = 256
)

// List is a compiled allowlist.
type List struct {
	pats []string // lower-cased, ":latest" trimmed
}

// Compile builds a List from stored patterns. It never fails: Check is
// the gate for what gets stored; a pattern that slipped past it is matched
// literally. An empty patterns gives nil, which allows everything.
func Compile(patterns []string) *List {
	if len(patterns) == 0 {
		return nil
	}
	l := &List{pats: make([]string, 0, len(patterns))}
	for _, p := range patterns {
		l.pats = append(l.pats, norm(p))
	}
	return l
}

// Check validates patterns given to the admin API: at most MaxPatterns,
// each non-empty, at most MaxPatternLen bytes, with no control characters
// or spaces. The error names the offending entry.
func Check(patterns []string) error {
	if len(patterns) > MaxPatterns {
		return fmt.Errorf("at most %d patterns", MaxPatterns)
	}
	for i, p := range patterns {
		switch {
		case p == "":
			return fmt.Errorf("pattern %d: empty", i)
		case len(p) > MaxPatternLen:
			return fmt.Errorf("pattern %d: longer than %d bytes", i, MaxPatternLen)
		case strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			return fmt.Errorf("pattern %d: must not contain spaces or control characters", i)
		}
	}
	return nil
}

// All reports whether l allows every model.
func (l *List) All() bool { return l == nil || len(l.pats) == 0 }

// Patterns returns the normalised patterns (nil for a List that allows
// everything).
func (l *List) Patterns() []string {
	if l.All() {
		return nil
	}
	return append([]string(nil), l.pats...)
}

// Allows reports whether model is on l.
func (l *List) Allows(model string) bool {
	if l.All() {
		return true
	}
	m := norm(model)
	// An untagged name is also its ":latest" spelling, which a pattern
	// such as "llama3:*" names.
	tagged := strings.Contains(m, ":")
	for _, p := range l.pats {
		if match(p, m, "") || !tagged && match(p, m, ":latest") {
			return true
		}
	}
	return false
}

// norm lower-cases ASCII letters and trims ":latest", so that "Llama3",
// "llama3" and "llama3:latest" compare equal.
func norm(s string) string {
	s = strings.TrimSuffix(strings.ToLower(s), ":latest")
	return s
}

// match reports whether the name a+b (two parts, so that no string is
// built on the request path) matches the glob pat ("*" any run, "?" one
// byte). Iterative with one backtrack point: never exponential, whatever
// the pattern.
func match(pat, a, b string) bool {
	at := func(i int) byte {
		if i < len(a) {
			return a[i]
		}
		return b[i-len(a)]
	}
	size := len(a) + len(b)
	p, n := 0, 0
	star, mark := -1, 0
	for n < size {
		switch {
		case p < len(pat) && (pat[p] == '?' || pat[p] == at(n)):
			p++
			n++
		case p < len(pat) && pat[p] == '*':
			star, mark = p, n
			p++
		case star >= 0:
			mark++
			p, n = star+1, mark
		default:
			return false
		}
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}
