package fetchguard

import "net/netip"

// addrClass names a range of addresses the fetcher refuses.
type addrClass struct {
	prefix netip.Prefix
	name   string
}

func classes(list ...string) []addrClass {
	out := make([]addrClass, 0, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		out = append(out, addrClass{netip.MustParsePrefix(list[i]), list[i+1]})
	}
	return out
}

// refusedV4 follows the IANA IPv4 special-purpose registry: everything not
// globally reachable, plus multicast and the deprecated 6to4 relay anycast.
// Order matters only where ranges nest (broadcast before reserved).
var refusedV4 = classes(
	"0.0.0.0/8", "unspecified",
	"10.0.0.0/8", "private",
	"100.64.0.0/10", "shared (CGNAT)",
	"127.0.0.0/8", "loopback",
	"169.254.0.0/16", "link-local",
	"172.16.0.0/12", "private",
	"192.0.0.0/24", "IETF protocol assignments",
	"192.0.2.0/24", "documentation",
	"192.88.99.0/24", "6to4 relay anycast",
	"192.168.0.0/16", "private",
	"198.18.0.0/15", "benchmarking",
	"198.51.100.0/24", "documentation",
	"203.0.113.0/24", "documentation",
	"224.0.0.0/4", "multicast",
	"255.255.255.255/32", "broadcast",
	"240.0.0.0/4", "reserved",
)

// IPv6 ranges that carry an IPv4 address the fetcher judges instead.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052, v4 in the last 32 bits
	teredo    = netip.MustParsePrefix("2001::/32")    // RFC 4380, server v4 in bits 32-63, client v4 inverted in the last 32
	sixToFour = netip.MustParsePrefix("2002::/16")    // RFC 3056, v4 in bits 16-47
	global6   = netip.MustParsePrefix("2000::/3")     // the only IPv6 unicast space in use
)

// refusedV6Global are the special ranges inside 2000::/3 (Teredo is
// handled before these).
var refusedV6Global = classes(
	"2001:db8::/32", "documentation",
	"2001::/23", "IETF protocol assignments",
	"3fff::/20", "documentation",
)

// namedV6 only names the common classes outside 2000::/3 for logs and
// tests; everything outside 2000::/3 is refused either way.
var namedV6 = classes(
	"::/128", "unspecified",
	"::1/128", "loopback",
	"::/96", "IPv4-compatible (deprecated)",
	"64:ff9b:1::/48", "NAT64 local-use",
	"100::/64", "discard-only",
	"fc00::/7", "unique local (private)",
	"fe80::/10", "link-local",
	"fec0::/10", "site-local (deprecated)",
	"ff00::/8", "multicast",
)

// refusedClass returns the class that makes a refused, or "" when a may be
// dialed. It ignores Config.AllowPrefixes.
func refusedClass(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid"
	}
	if a.Zone() != "" {
		return "zoned (link-local)"
	}
	a = a.Unmap()
	if a.Is4() {
		return class4(a)
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return embedded("NAT64", netip.AddrFrom4([4]byte(b[12:16])))
	case teredo.Contains(a):
		if c := embedded("Teredo server", netip.AddrFrom4([4]byte(b[4:8]))); c != "" {
			return c
		}
		return embedded("Teredo client", netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}))
	case sixToFour.Contains(a):
		return embedded("6to4", netip.AddrFrom4([4]byte(b[2:6])))
	case global6.Contains(a):
		return lookup(refusedV6Global, a)
	}
	if c := lookup(namedV6, a); c != "" {
		return c
	}
	return "not global unicast"
}

func class4(a netip.Addr) string { return lookup(refusedV4, a) }

func embedded(kind string, v4 netip.Addr) string {
	if c := class4(v4); c != "" {
		return kind + " of " + c
	}
	return ""
}

func lookup(list []addrClass, a netip.Addr) string {
	for _, c := range list {
		if c.prefix.Contains(a) {
			return c.name
		}
	}
	return ""
}
