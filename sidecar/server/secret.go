package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

const redacted = "[REDACTED]"

// Secret is the shared key that every request must present in the
// X-Sidecar-Key header. It never prints itself: String, Format, LogValue and
// MarshalText all redact it.
type Secret struct {
	sum [sha256.Size]byte
	set bool
}

// ErrEmptySecret is returned by NewSecret for an empty or blank key.
var ErrEmptySecret = errors.New("sidecar secret is empty")

// NewSecret makes a Secret from key, ignoring surrounding whitespace (a key
// file usually ends in a newline).
func NewSecret(key string) (Secret, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return Secret{}, ErrEmptySecret
	}
	return Secret{sum: sha256.Sum256([]byte(key)), set: true}, nil
}

// Matches reports whether got is the secret, in constant time. Both sides
// are hashed first so that the comparison leaks neither content nor length.
func (s Secret) Matches(got string) bool {
	if !s.set {
		return false
	}
	g := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(g[:], s.sum[:]) == 1
}

// IsSet reports whether the secret was made by NewSecret.
func (s Secret) IsSet() bool { return s.set }

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// String implements fmt.Stringer.
func (Secret) String() string { return redacted }

// GoString implements fmt.GoStringer, so %#v redacts too.
func (Secret) GoString() string { return redacted }

// Format implements fmt.Formatter for every verb.
func (Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// MarshalText implements encoding.TextMarshaler (used by JSON).
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
