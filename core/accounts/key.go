package accounts

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"

	"github.com/mindrouter/mindrouter/core/auth"
)

// KeyLen is the length of an issued key: "mr2_" and 43 url-safe base64
// characters (32 random bytes, 256 bits).
const KeyLen = len(auth.KeyPrefix) + 43

// PrefixLen is how much of a key is shown and stored in clear.
const PrefixLen = len(auth.KeyPrefix) + 8

// NewKey returns a fresh key, its display prefix and its SHA-256.
func NewKey() (key, prefix string, hash []byte, err error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", "", nil, errors.New("accounts: no randomness for a key: " + err.Error())
	}
	key = auth.KeyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(key))
	return key, key[:PrefixLen], sum[:], nil
}

// WellFormed reports whether key has the shape of an issued key, so that
// garbage is refused without a store lookup.
func WellFormed(key []byte) bool {
	if len(key) != KeyLen || string(key[:len(auth.KeyPrefix)]) != auth.KeyPrefix {
		return false
	}
	for _, c := range key[len(auth.KeyPrefix):] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// HashKey is the SHA-256 under which an issued key is stored.
func HashKey(key []byte) [32]byte { return sha256.Sum256(key) }
