package accounts

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Argon2id parameters of HashArgon2id: those of the reference
// implementation (argon2-cffi with time_cost=2, memory_cost=65536,
// parallelism=1), so a key hashed here and one imported from there cost the
// same to verify. 64 MiB and two passes put one guess at tens of
// milliseconds of one core, which is what a leaked hash must cost; p=1
// keeps a verification on one core of the gateway.
const (
	argonMemoryKiB = 64 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonSaltLen   = 16
	argonKeyLen    = 32
)

// Bounds a stored PHC string must respect before anything is computed: a
// hash with m=4GiB in the store would otherwise take the gateway down at
// the first login attempt.
const (
	maxArgonMemoryKiB = 256 * 1024
	maxArgonTime      = 16
	maxArgonThreads   = 16
	minArgonSalt      = 8
	maxArgonSalt      = 64
	minArgonHash      = 16
	maxArgonHash      = 64
)

// errPHC is wrapped by every parse error.
var errPHC = errors.New("accounts: malformed argon2id PHC string")

// phc is a parsed "$argon2id$v=19$m=…,t=…,p=…$salt$hash".
type phc struct {
	memory  uint32 // KiB
	time    uint32
	threads uint8
	salt    []byte
	hash    []byte
}

// argonInput is what the PHC hash is over: the lowercase hex SHA-256 of the
// key. The reference implementation hashes that (its "SHA-256-normalized
// input"), so its stored key_hash column imports unchanged.
func argonInput(key []byte) []byte {
	sum := sha256.Sum256(key)
	return hexSum(&sum)
}

func hexSum(sum *[32]byte) []byte {
	out := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(out, sum[:])
	return out
}

// HashArgon2id returns the PHC string under which an imported key is
// stored (store.APIKey.Argon2): Argon2id, m=64MiB, t=2, p=1, a 16-byte
// random salt and a 32-byte hash, over the hex SHA-256 of the key (as the
// reference implementation hashes its keys).
func HashArgon2id(key string) (string, error) {
	return hashArgon2id(key, argonMemoryKiB, argonTime)
}

// hashArgon2id is HashArgon2id with the cost chosen (tests use less).
func hashArgon2id(key string, memoryKiB, passes uint32) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("accounts: argon2id salt: %w", err)
	}
	p := phc{memory: memoryKiB, time: passes, threads: argonThreads, salt: salt}
	p.hash = argon2.IDKey(argonInput([]byte(key)), salt, p.time, p.memory, p.threads, argonKeyLen)
	return p.String(), nil
}

// VerifyArgon2id reports whether key matches the PHC string phc, comparing
// in constant time. The input hashed is the key's hex SHA-256, as in
// HashArgon2id. A string that is not exactly
// "$argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<hash>" (unpadded
// standard base64, parameters within sane bounds) is an error, not a
// mismatch.
func VerifyArgon2id(phc string, key []byte) (bool, error) {
	p, err := parsePHC(phc)
	if err != nil {
		return false, err
	}
	return p.verify(argonInput(key)), nil
}

// verify hashes input with p's parameters and compares in constant time.
func (p *phc) verify(input []byte) bool {
	got := argon2.IDKey(input, p.salt, p.time, p.memory, p.threads, uint32(len(p.hash)))
	return subtle.ConstantTimeCompare(got, p.hash) == 1
}

// String is the canonical PHC encoding.
func (p *phc) String() string {
	b64 := base64.RawStdEncoding
	return "$argon2id$v=19$m=" + strconv.FormatUint(uint64(p.memory), 10) +
		",t=" + strconv.FormatUint(uint64(p.time), 10) +
		",p=" + strconv.FormatUint(uint64(p.threads), 10) +
		"$" + b64.EncodeToString(p.salt) + "$" + b64.EncodeToString(p.hash)
}

// parsePHC parses strictly: one spelling per value (no signs, no leading
// zeros, no padding, canonical base64), so a string that parses encodes
// back to itself.
func parsePHC(s string) (phc, error) {
	var p phc
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" {
		return p, fmt.Errorf("%w: want 5 '$'-separated fields", errPHC)
	}
	if parts[1] != "argon2id" {
		return p, fmt.Errorf("%w: algorithm %q, want argon2id", errPHC, clip(parts[1]))
	}
	if parts[2] != "v=19" {
		return p, fmt.Errorf("%w: version %q, want v=19", errPHC, clip(parts[2]))
	}
	params := strings.Split(parts[3], ",")
	if len(params) != 3 {
		return p, fmt.Errorf("%w: parameters %q, want m=,t=,p=", errPHC, clip(parts[3]))
	}
	m, err1 := param(params[0], "m=", 8, maxArgonMemoryKiB)
	t, err2 := param(params[1], "t=", 1, maxArgonTime)
	th, err3 := param(params[2], "p=", 1, maxArgonThreads)
	if err := errors.Join(err1, err2, err3); err != nil {
		return p, err
	}
	if m < 8*th {
		return p, fmt.Errorf("%w: m=%d below 8·p", errPHC, m)
	}
	p.memory, p.time, p.threads = uint32(m), uint32(t), uint8(th)
	var err error
	if p.salt, err = b64field(parts[4], "salt", minArgonSalt, maxArgonSalt); err != nil {
		return p, err
	}
	if p.hash, err = b64field(parts[5], "hash", minArgonHash, maxArgonHash); err != nil {
		return p, err
	}
	return p, nil
}

// param reads "name=<decimal>" within [lo, hi].
func param(s, name string, lo, hi uint64) (uint64, error) {
	v, ok := strings.CutPrefix(s, name)
	if !ok || v == "" || len(v) > 10 || (v[0] == '0' && len(v) > 1) {
		return 0, fmt.Errorf("%w: parameter %q, want %s<number>", errPHC, clip(s), name)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, fmt.Errorf("%w: parameter %q, want %s<number>", errPHC, clip(s), name)
		}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%w: %s%s outside [%d, %d]", errPHC, name, v, lo, hi)
	}
	return n, nil
}

func b64field(s, what string, lo, hi int) ([]byte, error) {
	// The decoder skips \r and \n; encoding back refuses them too.
	b, err := base64.RawStdEncoding.Strict().DecodeString(s)
	if err != nil || base64.RawStdEncoding.EncodeToString(b) != s {
		return nil, fmt.Errorf("%w: %s is not unpadded base64", errPHC, what)
	}
	if len(b) < lo || len(b) > hi {
		return nil, fmt.Errorf("%w: %s of %d bytes, want %d to %d", errPHC, what, len(b), lo, hi)
	}
	return b, nil
}

// clip bounds text echoed from a stored string in an error.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
