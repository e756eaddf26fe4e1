// Package pathtmpl matches request paths against route templates such as
// "/v1beta/models/{model}:generateContent": literal text with named
// captures. A capture matches one or more bytes of any kind, '/' and ':'
// included, because the names it carries do (a model "openai/gpt-oss-120b"
// or "llama3.2:3b" is sent unescaped in the path). A capture is bounded by
// the literal after it: every capture but the last ends at the first
// occurrence of that literal, and the last one at the template's literal
// suffix, which must end the path.
//
// Matching allocates nothing: captures are byte ranges of the path,
// written into a caller's fixed array.
package pathtmpl

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// MaxCaptures bounds the captures of one template.
const MaxCaptures = 4

// Span is a capture's byte range in the matched path.
type Span struct{ Start, End int }

// Captures are the spans of one match, in template order.
type Captures [MaxCaptures]Span

// Template is a parsed route path. Immutable; safe for concurrent use.
type Template struct {
	src   string
	lits  []string // lits[0] before the first capture, lits[i] after capture i-1
	names []string
}

// ErrSyntax is wrapped by Parse's errors.
var ErrSyntax = errors.New("pathtmpl: bad template")

// Parse parses a template. A path without captures is a template that
// matches itself only. Two captures must be separated by literal text, so
// that where one ends is defined.
func Parse(src string) (*Template, error) {
	if !strings.HasPrefix(src, "/") {
		return nil, fmt.Errorf("%w %q: must start with /", ErrSyntax, src)
	}
	t := &Template{src: src}
	rest := src
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			if strings.IndexByte(rest, '}') >= 0 {
				return nil, fmt.Errorf("%w %q: unmatched }", ErrSyntax, src)
			}
			t.lits = append(t.lits, rest)
			return t, nil
		}
		lit := rest[:i]
		if strings.IndexByte(lit, '}') >= 0 {
			return nil, fmt.Errorf("%w %q: unmatched }", ErrSyntax, src)
		}
		if len(t.names) > 0 && lit == "" {
			return nil, fmt.Errorf("%w %q: two captures need literal text between them", ErrSyntax, src)
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("%w %q: unclosed {", ErrSyntax, src)
		}
		name := rest[i+1 : i+j]
		if !validName(name) {
			return nil, fmt.Errorf("%w %q: capture name %q must be letters, digits or _", ErrSyntax, src, name)
		}
		for _, n := range t.names {
			if n == name {
				return nil, fmt.Errorf("%w %q: capture %q twice", ErrSyntax, src, name)
			}
		}
		if len(t.names) == MaxCaptures {
			return nil, fmt.Errorf("%w %q: more than %d captures", ErrSyntax, src, MaxCaptures)
		}
		t.lits = append(t.lits, lit)
		t.names = append(t.names, name)
		rest = rest[i+j+1:]
	}
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// String returns the template as written.
func (t *Template) String() string { return t.src }

// Literal reports whether the template has no captures.
func (t *Template) Literal() bool { return len(t.names) == 0 }

// Names returns the capture names in order. The slice is shared: do not
// change it.
func (t *Template) Names() []string { return t.names }

// Index returns the position of capture name, -1 when the template has
// none of that name.
func (t *Template) Index(name string) int {
	for i, n := range t.names {
		if n == name {
			return i
		}
	}
	return -1
}

// Prefix and Suffix are the literal text before the first capture and
// after the last.
func (t *Template) Prefix() string { return t.lits[0] }
func (t *Template) Suffix() string { return t.lits[len(t.lits)-1] }

// LiteralLen is the length of the template's literal text: of two
// templates matching one path, the one with more literal text is the more
// specific.
func (t *Template) LiteralLen() int {
	n := 0
	for _, l := range t.lits {
		n += len(l)
	}
	return n
}

// Match reports whether path matches t, filling caps with the captures'
// spans. It does not allocate.
func (t *Template) Match(path []byte, caps *Captures) bool {
	if len(t.names) == 0 {
		return string(path) == t.lits[0]
	}
	if !bytes.HasPrefix(path, []byte(t.lits[0])) {
		return false
	}
	suffix := t.lits[len(t.lits)-1]
	if len(path) < len(t.lits[0])+len(suffix) || !bytes.HasSuffix(path, []byte(suffix)) {
		return false
	}
	end := len(path) - len(suffix) // where the last capture ends
	pos := len(t.lits[0])
	last := len(t.names) - 1
	for i := 0; i < last; i++ {
		lit := t.lits[i+1]
		j := bytes.Index(path[pos:end], []byte(lit))
		if j <= 0 { // absent, or an empty capture
			return false
		}
		caps[i] = Span{pos, pos + j}
		pos += j + len(lit)
	}
	if pos >= end {
		return false // the last capture would be empty
	}
	caps[last] = Span{pos, end}
	return true
}

// Overlap reports whether some path may match both a and b. It is exact
// for templates of at most one capture and conservative (it may say yes
// where no path matches both) for more.
func Overlap(a, b *Template) bool {
	switch {
	case a.Literal() && b.Literal():
		return a.src == b.src
	case a.Literal():
		var c Captures
		return b.Match([]byte(a.src), &c)
	case b.Literal():
		var c Captures
		return a.Match([]byte(b.src), &c)
	}
	pa, pb := a.Prefix(), b.Prefix()
	sa, sb := a.Suffix(), b.Suffix()
	return (strings.HasPrefix(pa, pb) || strings.HasPrefix(pb, pa)) &&
		(strings.HasSuffix(sa, sb) || strings.HasSuffix(sb, sa))
}
