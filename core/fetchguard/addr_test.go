package fetchguard

import (
	"net/netip"
	"strings"
	"testing"
)

// refusedAddrs has one or more addresses of every refused class, IPv4,
// IPv6 and the IPv6 forms that carry an IPv4 address.
var refusedAddrs = []struct{ addr, class string }{
	{"0.0.0.0", "unspecified"},
	{"0.1.2.3", "unspecified"},
	{"10.1.2.3", "private"},
	{"100.64.0.1", "shared"},
	{"100.100.100.200", "shared"}, // Alibaba Cloud metadata
	{"100.127.255.254", "shared"},
	{"127.0.0.1", "loopback"},
	{"127.255.255.254", "loopback"},
	{"169.254.169.254", "link-local"}, // AWS, GCP, Azure metadata
	{"172.16.0.1", "private"},
	{"172.31.255.255", "private"},
	{"192.0.0.192", "IETF"},
	{"192.0.2.1", "documentation"},
	{"192.88.99.1", "6to4 relay"},
	{"192.168.1.1", "private"},
	{"198.18.0.1", "benchmarking"},
	{"198.19.255.255", "benchmarking"},
	{"198.51.100.7", "documentation"},
	{"203.0.113.9", "documentation"},
	{"224.0.0.1", "multicast"},
	{"239.255.255.250", "multicast"},
	{"240.0.0.1", "reserved"},
	{"255.255.255.255", "broadcast"},

	{"::", "unspecified"},
	{"::1", "loopback"},
	{"::ffff:127.0.0.1", "loopback"},
	{"::ffff:10.0.0.1", "private"},
	{"::ffff:169.254.169.254", "link-local"},
	{"::127.0.0.1", "IPv4-compatible"},
	{"::8.8.8.8", "IPv4-compatible"}, // deprecated form: refused whatever it carries
	{"64:ff9b::7f00:1", "NAT64 of loopback"},
	{"64:ff9b::a9fe:a9fe", "NAT64 of link-local"},
	{"64:ff9b::10.0.0.1", "NAT64 of private"},
	{"64:ff9b:1::1", "NAT64 local-use"},
	{"2002:7f00:1::1", "6to4 of loopback"},
	{"2002:a9fe:a9fe::", "6to4 of link-local"},
	{"2001:0:7f00:1::", "Teredo server of loopback"},
	{"2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo client of loopback"}, // ^80fffffe = 127.0.0.1
	{"2001:db8::1", "documentation"},
	{"3fff::1", "documentation"},
	{"2001:2::1", "IETF"}, // benchmarking
	{"2001:10::1", "IETF"},
	{"100::1", "discard-only"},
	{"fc00::1", "unique local"},
	{"fd00:ec2::254", "unique local"}, // AWS IPv6 metadata
	{"fe80::1", "link-local"},
	{"fe80::1%eth0", "zoned"},
	{"fec0::1", "site-local"},
	{"ff02::1", "multicast"},
	{"5f00::1", "not global unicast"}, // SRv6 SIDs
	{"4000::1", "not global unicast"},
}

var allowedAddrs = []string{
	"8.8.8.8",
	"1.1.1.1",
	"100.63.255.255",
	"100.128.0.0",
	"172.15.255.255",
	"172.32.0.0",
	"192.0.1.1",
	"198.17.255.255",
	"198.20.0.0",
	"223.255.255.255",
	"2606:4700:4700::1111",
	"2001:4860:4860::8888",
	"::ffff:8.8.8.8",
	"64:ff9b::808:808",
	"2002:808:808::1",
	"2001:0:4136:e378:8000:63bf:f7f7:f7f7", // Teredo: public server, client 8.8.8.8
}

func TestRefusedClass(t *testing.T) {
	for _, tc := range refusedAddrs {
		got := refusedClass(netip.MustParseAddr(tc.addr))
		if !strings.Contains(got, tc.class) {
			t.Errorf("refusedClass(%s) = %q, want %q", tc.addr, got, tc.class)
		}
	}
	for _, s := range allowedAddrs {
		if got := refusedClass(netip.MustParseAddr(s)); got != "" {
			t.Errorf("refusedClass(%s) = %q, want allowed", s, got)
		}
	}
}

// TestFetchRefusesLiterals puts every refused address in a URL, in every
// notation Go's URL parser reads as that address; none is dialed.
func TestFetchRefusesLiterals(t *testing.T) {
	res := &resolver{}
	f := newFetcher(t, Config{}, res)
	for _, tc := range refusedAddrs {
		a := netip.MustParseAddr(tc.addr)
		host := tc.addr
		if a.Is6() {
			host = "[" + strings.Replace(tc.addr, "%", "%25", 1) + "]"
		}
		for _, u := range []string{"http://" + host + "/x.png", "https://" + host + ":8443/x.png"} {
			t.Run(u, func(t *testing.T) {
				_, err := f.Fetch(t.Context(), u)
				e := wantReason(t, err, ReasonForbiddenAddress)
				if e.Msg != "image URL host is not allowed" {
					t.Errorf("message %q", e.Msg)
				}
			})
		}
	}
	for _, u := range []string{
		"http://[::ffff:7f00:1]/",
		"http://[0:0:0:0:0:ffff:127.0.0.1]/",
		"http://[0000:0000:0000:0000:0000:ffff:a9fe:a9fe]/",
		"http://[64:ff9b::127.0.0.1]/",
		"http://[::ffff:0a00:0001]:80/",
	} {
		t.Run(u, func(t *testing.T) {
			_, err := f.Fetch(t.Context(), u)
			wantReason(t, err, ReasonForbiddenAddress)
		})
	}
	if q := res.questions(); len(q) != 0 {
		t.Errorf("literal addresses went to the resolver: %q", q)
	}
}

func TestAllowPrefixes(t *testing.T) {
	f := newFetcher(t, Config{}, nil, netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("::ffff:127.0.0.2/128"))
	for s, want := range map[string]bool{
		"10.1.2.3":         true,
		"::ffff:10.1.2.3":  true,
		"10.2.0.1":         false,
		"127.0.0.2":        true, // mapped prefix matches the plain address
		"127.0.0.1":        false,
		"fe80::1%eth0":     false,
		"8.8.8.8":          true,
		"169.254.169.254":  false,
		"64:ff9b::a01:203": false, // the allow-list names addresses, not what they embed
	} {
		if got := f.allowed(netip.MustParseAddr(s)); got != want {
			t.Errorf("allowed(%s) = %v, want %v", s, got, want)
		}
	}
}
