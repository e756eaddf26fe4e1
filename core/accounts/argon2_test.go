package accounts

import (
	"errors"
	"strings"
	"testing"
)

// cheapPHC hashes key like HashArgon2id with test-sized parameters, so the
// many Argon2 runs in tests stay fast (64 MiB takes seconds under -race).
func cheapPHC(t testing.TB, key string) string {
	t.Helper()
	s, err := hashArgon2id(key, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHashArgon2id runs the real cost once: the parameters, and that the
// hash verifies.
func TestHashArgon2id(t *testing.T) {
	t.Parallel() // seconds of Argon2id under -race; overlap it with the rest
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
	ok, err := VerifyArgon2id(s, []byte(key))
	if err != nil || !ok {
		t.Fatalf("VerifyArgon2id(own hash) = %v, %v; want true", ok, err)
	}
}

func TestVerifyArgon2id_RoundTrip(t *testing.T) {
	key, _, _, _ := NewKey()
	s := cheapPHC(t, key)
	if strings.Contains(s, key) || strings.Contains(s, key[4:]) {
		t.Fatal("the PHC string contains the key")
	}
	if ok, err := VerifyArgon2id(s, []byte(key)); err != nil || !ok {
		t.Fatalf("VerifyArgon2id(own hash) = %v, %v; want true", ok, err)
	}
	for _, other := range []string{key + "x", key[:len(key)-1], strings.ToUpper(key), ""} {
		if ok, err := VerifyArgon2id(s, []byte(other)); err != nil || ok {
			t.Fatalf("VerifyArgon2id(other key %q) = %v, %v; want false", other, ok, err)
		}
	}
	if cheapPHC(t, key) == s {
		t.Fatal("two hashes of one key are equal: the salt is not random")
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
