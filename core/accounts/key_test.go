package accounts

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"
)

func TestNewKey(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		key, prefix, hash, err := NewKey()
		if err != nil {
			t.Fatal(err)
		}
		if len(key) != KeyLen || !strings.HasPrefix(key, "mr2_") || !WellFormed([]byte(key)) {
			t.Fatalf("NewKey() = %q: not a well-formed key", key)
		}
		if prefix != key[:PrefixLen] {
			t.Fatalf("prefix %q is not the key's first %d characters", prefix, PrefixLen)
		}
		sum := sha256.Sum256([]byte(key))
		if !bytes.Equal(hash, sum[:]) || HashKey([]byte(key)) != sum {
			t.Fatal("hash is not the key's SHA-256")
		}
		if seen[key] {
			t.Fatal("NewKey repeated a key")
		}
		seen[key] = true
	}
}

func TestWellFormed(t *testing.T) {
	good := "mr2_" + strings.Repeat("aZ09-_", 7) + "x"
	cases := map[string]bool{
		good:                                   true,
		good[:len(good)-1]:                     false, // short
		good + "x":                             false, // long
		"sk_" + good[3:]:                       false,
		"mr2_" + strings.Repeat("a", 42) + "=": false,
		"mr2_" + strings.Repeat("a", 42) + "+": false,
		"":                                     false,
	}
	for k, want := range cases {
		if got := WellFormed([]byte(k)); got != want {
			t.Errorf("WellFormed(%q) = %v, want %v", k, got, want)
		}
	}
}
