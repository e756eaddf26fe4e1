package fetchguard

import (
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// maxURLLen bounds an http(s) image URL; signed CDN URLs stay well under.
const maxURLLen = 16 << 10

// refusedNames are refused by name before any lookup: loopback and cloud
// metadata names, which resolve to refused addresses anyway except where a
// hosts file or split DNS says otherwise.
var refusedNames = []string{
	"localhost",
	"metadata",
	"metadata.google.internal",
	"metadata.goog",
	"instance-data",
	"instance-data.ec2.internal",
}

// refusedSuffixes are special-use domains that only ever name private
// hosts (RFC 6761 localhost, RFC 6762 local, ICANN's internal, RFC 8375
// home.arpa).
var refusedSuffixes = []string{"localhost", "local", "internal", "home.arpa"}

// checkURL checks a URL, the client's or a redirect's, before any network
// use. The dialer repeats the host part; this gives the early, precise error.
func (f *Fetcher) checkURL(u *url.URL) error {
	if !slices.Contains(f.cfg.AllowedSchemes, u.Scheme) {
		return newError(ReasonScheme, nil, "image URL scheme must be %s", strings.Join(f.cfg.AllowedSchemes, " or "))
	}
	if u.Opaque != "" || u.Host == "" {
		return newError(ReasonURL, nil, "image URL has no host")
	}
	if u.User != nil {
		// net/http would send them as Basic auth.
		return newError(ReasonURL, nil, "image URL must not contain credentials")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return newError(ReasonURL, err, "image URL port is not valid")
		}
	}
	addr, _, err := parseHost(u.Hostname())
	if err != nil {
		return err
	}
	if addr.IsValid() && !f.allowed(addr) {
		return errForbidden(nil)
	}
	return nil
}

// parseHost reads a host as it appears in a URL or dial address, brackets
// removed. It returns either the literal address or the lower-case name to
// resolve (without a trailing dot).
func parseHost(host string) (netip.Addr, string, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a, "", nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if !validName(name) {
		return netip.Addr{}, "", newError(ReasonURL, nil, "image URL host is not a valid host name")
	}
	last := name[strings.LastIndexByte(name, '.')+1:]
	if numericLabel(last) {
		// "2130706433", "0x7f.1", "0177.0.0.1", "127.1": C resolvers read
		// these as addresses (inet_aton). No DNS name ends in a number, so
		// refusing them costs nothing.
		return netip.Addr{}, "", newError(ReasonURL, nil, "image URL host must be a name or an IP address in standard notation")
	}
	if refusedName(name) {
		return netip.Addr{}, "", errForbidden(nil)
	}
	return netip.Addr{}, name, nil
}

func refusedName(name string) bool {
	if slices.Contains(refusedNames, name) {
		return true
	}
	for _, s := range refusedSuffixes {
		if name == s || strings.HasSuffix(name, "."+s) {
			return true
		}
	}
	return false
}

// validName accepts ASCII host names: letters, digits, '-' and '_' (seen in
// real CDN names), labels of 1 to 63 bytes, 253 bytes in all. Unicode names
// must come as punycode.
func validName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// numericLabel reports whether s is all decimal digits or a 0x hex number,
// the forms inet_aton accepts for each part.
func numericLabel(s string) bool {
	if rest, ok := strings.CutPrefix(s, "0x"); ok {
		s = rest
		for i := 0; i < len(s); i++ {
			if !isHex(s[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// allowed reports whether a may be dialed: in an operator's allow prefix,
// or in no refused class.
func (f *Fetcher) allowed(a netip.Addr) bool {
	if a.Zone() != "" {
		return false
	}
	a = a.Unmap()
	for _, p := range f.cfg.AllowPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return refusedClass(a) == ""
}
