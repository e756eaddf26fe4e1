package fetchguard

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// inetAton is an independent reading of a host the way C resolvers'
// inet_aton does: 1 to 4 parts, each decimal, 0-octal or 0x-hex, the last
// part filling the remaining bytes.
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		base, digits := 10, p
		switch {
		case strings.HasPrefix(strings.ToLower(p), "0x"):
			base, digits = 16, p[2:]
			if digits == "" {
				digits = "0"
			}
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

func TestInetAton(t *testing.T) {
	for s, want := range map[string]string{
		"2130706433": "127.0.0.1", "0x7f.1": "127.0.0.1", "0177.0.0.1": "127.0.0.1",
		"127.1": "127.0.0.1", "10.0x10.1": "10.16.0.1", "0x.0.0.0": "0.0.0.0",
	} {
		if a, ok := inetAton(s); !ok || a.String() != want {
			t.Errorf("inetAton(%q) = %v %v, want %s", s, a, ok, want)
		}
	}
	for _, s := range []string{"example.com", "256.0.0.1", "1.2.3.4.5", "08.1", ""} {
		if a, ok := inetAton(s); ok {
			t.Errorf("inetAton(%q) = %v", s, a)
		}
	}
}

// FuzzGuard: no input panics, and no refused address passes the URL check
// or the dial-time resolve step, in any notation.
func FuzzGuard(f *testing.F) {
	for _, s := range []string{
		"http://127.0.0.1/", "http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/",
		"http://127.1/", "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/",
		"http://[64:ff9b::7f00:1]/", "http://[2002:7f00:1::]/", "http://[fe80::1%25eth0]/",
		"http://169.254.169.254/latest/", "http://metadata.google.internal/", "http://localhost./",
		"https://example.com:443/i.png", "http://8.8.8.8/", "http://[2606:4700::1111]/",
		"http://user@host/", "http://1.2.3.4:0/", "HTTP://EXAMPLE.COM/", "http://a.b.0x10/",
		"http://[::ffff:0:7f00:1]/", "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
	} {
		f.Add(s)
	}
	res := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil // every name is loopback
	}
	fe, err := New(Config{Resolver: res})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		// The dialer's view: any host, any address string.
		if addrs, err := fe.resolve(t.Context(), raw); err == nil {
			a, perr := netip.ParseAddr(raw)
			if perr != nil || len(addrs) != 1 || refusedClass(addrs[0]) != "" {
				t.Fatalf("resolve(%q) passed %v", raw, addrs)
			}
			if _, ok := inetAton(raw); ok && a.Is4() && a.String() != raw {
				t.Fatalf("resolve(%q) passed a non-standard notation", raw)
			}
		}
		if err := fe.control("tcp", raw, nil); err == nil {
			ap, perr := netip.ParseAddrPort(raw)
			if perr != nil || refusedClass(ap.Addr()) != "" {
				t.Fatalf("control(%q) passed", raw)
			}
		}

		// The URL check: a refused address in any notation never passes.
		u, err := url.Parse(raw)
		if err != nil || fe.checkURL(u) != nil {
			return
		}
		host := u.Hostname()
		if a, err := netip.ParseAddr(host); err == nil && !fe.allowed(a) {
			t.Fatalf("checkURL(%q) passed refused address %v", raw, a)
		}
		if ip := net.ParseIP(host); ip != nil {
			a, _ := netip.AddrFromSlice(ip)
			if !fe.allowed(a) {
				t.Fatalf("checkURL(%q) passed refused address %v", raw, ip)
			}
		}
		if a, ok := inetAton(strings.TrimSuffix(host, ".")); ok && a.String() != host {
			t.Fatalf("checkURL(%q) passed inet_aton form of %v", raw, a)
		}
	})
}
