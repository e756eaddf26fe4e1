package accounts

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"
)

// cheapPHC hashes key like HashArgon2id with test-sized parameters, so the
// many Argon2 runs in tests stay fast.
func cheapPHC(t testing.TB, key string) string {
	t.Helper()
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		t.Fatal(err)
	}
	p := phc{memory: 64, time: 1, threads: 1, salt: salt}
	p.hash = argon2.IDKey(argonInput([]byte(key)), salt, p.time, p.memory, p.threads, 32)
	return p.String()
}

func TestHashArgon2id_RoundTrip(t *testing.T) {
	key, _, _, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := HashArgon2id(key)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s, "$argon2id$v=19$m=65536,t=2,p=1$") {
		t.Fatalf("HashArgon2id = %q, want the m=65536,t=2,p=1 parameters", s)
	}
	if strings.Contains(s, key) {
		t.Fatal("the PHC string contains the key")
	}
	ok, err := VerifyArgon2id(s, []byte(key))
	if err != nil || !ok {
		t.Fatalf("VerifyArgon2id(own hash) = %v, %v; want true", ok, err)
	}
	ok, err = VerifyArgon2id(s, []byte(key+"x"))
	if err != nil || ok {
		t.Fatalf("VerifyArgon2id(other key) = %v, %v; want false", ok, err)
	}
	s2, _ := HashArgon2id(key)
	if s2 == s {
		t.Fatal("two hashes of one key are equal: the salt is not random")
	}
}

// TestVerifyArgon2id_Reference checks a hash made the reference
// implementation's way, by the C reference library that argon2-cffi
// binds (libargon2 argon2id_hash_encoded, t=2, m=65536, p=1, over the
// lowercase hex SHA-256 of the key, salt "0123456789abcdef").
func TestVerifyArgon2id_Reference(t *testing.T) {
	const key = "mr2_fGx0lQ2u9Zk7VtNq3hJ8wRbY5cPaE1sDmLoXiK4nT6U"
	const ref = "$argon2id$v=19$m=65536,t=2,p=1$MDEyMzQ1Njc4OWFiY2RlZg$0sBuH/9tdT1RwBTE2ThB5AsoVTS8ikvzmIbI6nAM+0U"
	ok, err := VerifyArgon2id(ref, []byte(key))
	if err != nil || !ok {
		t.Fatalf("VerifyArgon2id(libargon2 hash) = %v, %v; want true", ok, err)
	}
	if ok, _ := VerifyArgon2id(ref, []byte(key[:len(key)-1]+"V")); ok {
		t.Fatal("a different key verified")
	}
}

func TestVerifyArgon2id_Malformed(t *testing.T) {
	good := cheapPHC(t, "mr2_whatever_key_material")
	parts := strings.Split(good, "$")
	salt, hash := parts[4], parts[5]
	cases := map[string]string{
		"empty":             "",
		"argon2i":           "$argon2i$v=19$m=64,t=1,p=1$" + salt + "$" + hash,
		"argon2d":           "$argon2d$v=19$m=64,t=1,p=1$" + salt + "$" + hash,
		"old version":       "$argon2id$v=16$m=64,t=1,p=1$" + salt + "$" + hash,
		"no version":        "$argon2id$m=64,t=1,p=1$" + salt + "$" + hash,
		"params reordered":  "$argon2id$v=19$t=1,m=64,p=1$" + salt + "$" + hash,
		"leading zero":      "$argon2id$v=19$m=064,t=1,p=1$" + salt + "$" + hash,
		"sign":              "$argon2id$v=19$m=+64,t=1,p=1$" + salt + "$" + hash,
		"memory too big":    "$argon2id$v=19$m=4194304,t=1,p=1$" + salt + "$" + hash,
		"memory below 8p":   "$argon2id$v=19$m=8,t=1,p=2$" + salt + "$" + hash,
		"zero passes":       "$argon2id$v=19$m=64,t=0,p=1$" + salt + "$" + hash,
		"too many passes":   "$argon2id$v=19$m=64,t=100,p=1$" + salt + "$" + hash,
		"zero lanes":        "$argon2id$v=19$m=64,t=1,p=0$" + salt + "$" + hash,
		"huge number":       "$argon2id$v=19$m=99999999999999999999,t=1,p=1$" + salt + "$" + hash,
		"keyid":             "$argon2id$v=19$m=64,t=1,p=1,keyid=AAAA$" + salt + "$" + hash,
		"padded salt":       "$argon2id$v=19$m=64,t=1,p=1$" + salt + "==$" + hash,
		"url base64":        "$argon2id$v=19$m=64,t=1,p=1$" + strings.ReplaceAll(salt, "+", "-") + "-$" + hash,
		"short salt":        "$argon2id$v=19$m=64,t=1,p=1$AAAA$" + hash,
		"short hash":        "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$AAAA",
		"missing hash":      "$argon2id$v=19$m=64,t=1,p=1$" + salt,
		"trailing field":    good + "$",
		"no leading dollar": strings.TrimPrefix(good, "$"),
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			ok, err := VerifyArgon2id(s, []byte("mr2_whatever_key_material"))
			if err == nil || ok {
				t.Fatalf("VerifyArgon2id(%q) = %v, %v; want an error", s, ok, err)
			}
			if !errors.Is(err, errPHC) {
				t.Fatalf("error %v does not wrap errPHC", err)
			}
			if strings.Contains(err.Error(), hash) {
				t.Fatalf("error %q echoes the hash", err)
			}
		})
	}
	if ok, err := VerifyArgon2id(good, []byte("mr2_whatever_key_material")); !ok || err != nil {
		t.Fatalf("the unaltered string: %v, %v", ok, err)
	}
}

// FuzzVerifyArgon2id: no input panics, and what parses is canonical
// (encodes back to itself), so one hash has one spelling.
func FuzzVerifyArgon2id(f *testing.F) {
	f.Add(cheapPHC(f, "mr2_seed"), []byte("mr2_seed"))
	f.Add("$argon2id$v=19$m=65536,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$"+strings.Repeat("A", 43), []byte("k"))
	f.Add("$argon2id$v=19$m=8,t=1,p=1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA", []byte{})
	f.Add("$$$$$", []byte("x"))
	f.Fuzz(func(t *testing.T, s string, key []byte) {
		p, err := parsePHC(s)
		if err != nil {
			if !errors.Is(err, errPHC) {
				t.Fatalf("parse error %v does not wrap errPHC", err)
			}
			return
		}
		if got := p.String(); got != s {
			t.Fatalf("parsePHC(%q) encodes back as %q", s, got)
		}
		if p.memory <= 1024 && p.time <= 2 { // keep each fuzz run cheap
			if _, err := VerifyArgon2id(s, key); err != nil {
				t.Fatalf("VerifyArgon2id after a clean parse: %v", err)
			}
		}
	})
}
