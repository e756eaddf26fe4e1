package auth

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestKeyFromHeaders(t *testing.T) {
	cases := []struct{ authz, xkey, want string }{
		{"Bearer mr2_abc", "", "mr2_abc"},
		{"bearer  mr2_abc ", "", "mr2_abc"},
		{"", "mr2_x", "mr2_x"},
		{"Basic Zm9v", "mr2_x", "mr2_x"},
		{"", "", ""},
	}
	for _, c := range cases {
		if got := string(KeyFromHeaders([]byte(c.authz), []byte(c.xkey))); got != c.want {
			t.Errorf("KeyFromHeaders(%q,%q) = %q, want %q", c.authz, c.xkey, got, c.want)
		}
	}
}

func TestAdminKey(t *testing.T) {
	if _, err := NewAdminKey("short"); err == nil {
		t.Fatal("accepted a key without the mr2_ prefix")
	}
	a, err := NewAdminKey("mr2_0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if p, err := a.Authenticate(ctx, []byte("mr2_0123456789abcdef")); err != nil || !p.Admin {
		t.Fatalf("good key: %v %+v", err, p)
	}
	if _, err := a.Authenticate(ctx, []byte("mr2_0123456789abcdeX")); !errors.Is(err, ErrBadKey) {
		t.Fatalf("bad key: %v", err)
	}
	if _, err := a.Authenticate(ctx, nil); !errors.Is(err, ErrNoKey) {
		t.Fatalf("no key: %v", err)
	}
	if s := fmt.Sprint(a.key); s != "[redacted]" {
		t.Fatalf("secret printed as %q", s)
	}
}
