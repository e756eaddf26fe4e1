package fetchguard

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestNewDefaults(t *testing.T) {
	f, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := f.cfg
	if c.MaxBytes != DefaultMaxBytes || c.Timeout != DefaultTimeout || c.MaxRedirects != DefaultMaxRedirects ||
		!slices.Equal(c.AllowedSchemes, []string{"http", "https"}) || c.Resolver == nil || len(c.AllowPrefixes) != 0 {
		t.Errorf("defaults: %+v", c)
	}
	// The environment's proxy would do the dialing for us, unchecked.
	if f.transport.Proxy != nil || f.client.Jar != nil || f.transport.TLSClientConfig.InsecureSkipVerify {
		t.Error("transport uses a proxy, a cookie jar or skips TLS verification")
	}
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxBytes: -1}, "max bytes"},
		{Config{Timeout: -1}, "timeout"},
		{Config{AllowedSchemes: []string{"https", "ftp"}}, `"ftp"`},
		{Config{AllowPrefixes: []netip.Prefix{{}}}, "not valid"},
		{Config{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}}, "every address"},
		{Config{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("::/0")}}, "every address"},
	} {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	// Every problem at once.
	_, err := New(Config{MaxBytes: -1, Timeout: -1})
	if err == nil || !strings.Contains(err.Error(), "max bytes") || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("joined errors: %v", err)
	}
}

func TestNewCopiesAndNormalizes(t *testing.T) {
	schemes := []string{"https"}
	prefixes := []netip.Prefix{netip.MustParsePrefix("10.1.2.3/16"), netip.MustParsePrefix("::ffff:192.168.0.0/112")}
	f, err := New(Config{AllowedSchemes: schemes, AllowPrefixes: prefixes})
	if err != nil {
		t.Fatal(err)
	}
	schemes[0] = "http"
	prefixes[0] = netip.MustParsePrefix("169.254.0.0/16")
	if f.cfg.AllowedSchemes[0] != "https" {
		t.Error("config shares the caller's schemes slice")
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("192.168.0.0/16")}
	if !slices.Equal(f.cfg.AllowPrefixes, want) {
		t.Errorf("prefixes %v, want %v", f.cfg.AllowPrefixes, want)
	}
}

func TestReasonString(t *testing.T) {
	seen := map[string]bool{}
	for r := ReasonURL; r <= ReasonRedirects; r++ {
		s := r.String()
		if strings.HasPrefix(s, "reason(") || seen[s] {
			t.Errorf("reason %d has name %q", r, s)
		}
		seen[s] = true
	}
	if s := Reason(200).String(); s != "reason(200)" {
		t.Errorf("unknown reason: %q", s)
	}
}
