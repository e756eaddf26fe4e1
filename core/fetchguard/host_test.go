package fetchguard

import "testing"

// TestNumericHostsRefused: inet_aton spellings of addresses are refused
// before any lookup, whatever address they spell.
func TestNumericHostsRefused(t *testing.T) {
	res := &resolver{table: map[string][]string{}}
	f := newFetcher(t, Config{}, res)
	for _, host := range []string{
		"2130706433",      // 127.0.0.1
		"0x7f.1",          // 127.0.0.1
		"0x7F.0.0.1",      // upper case hex
		"0x7f000001",      // 127.0.0.1
		"0177.0.0.1",      // octal
		"017700000001",    // octal, one part
		"127.1",           // short form
		"127.0.1",         // short form
		"127.000.000.001", // leading zeros
		"127.0.0.1.",      // trailing dot
		"0x.0x.0x.0x",     // empty hex parts
		"134744072",       // 8.8.8.8: refused for its notation, not its address
		"1.2.3.4.5",
		"example.123",
		"a.0xff",
	} {
		t.Run(host, func(t *testing.T) {
			_, err := f.Fetch(t.Context(), "http://"+host+"/i.png")
			wantReason(t, err, ReasonURL)
		})
	}
	if q := res.questions(); len(q) != 0 {
		t.Errorf("numeric hosts went to the resolver: %q", q)
	}
}

func TestRefusedNames(t *testing.T) {
	res := &resolver{}
	f := newFetcher(t, Config{}, res)
	for _, host := range []string{
		"localhost",
		"LOCALHOST.",
		"app.localhost",
		"metadata",
		"metadata.google.internal",
		"Metadata.Google.Internal.",
		"metadata.goog",
		"instance-data",
		"instance-data.ec2.internal",
		"db.internal",
		"printer.local",
		"nas.home.arpa",
	} {
		t.Run(host, func(t *testing.T) {
			_, err := f.Fetch(t.Context(), "http://"+host+"/i.png")
			wantReason(t, err, ReasonForbiddenAddress)
		})
	}
	if q := res.questions(); len(q) != 0 {
		t.Errorf("refused names went to the resolver: %q", q)
	}
}

func TestBadURLs(t *testing.T) {
	f := newFetcher(t, Config{}, nil)
	for _, tc := range []struct {
		url  string
		want Reason
	}{
		{"", ReasonScheme},
		{"//example.com/i.png", ReasonScheme},
		{"/i.png", ReasonScheme},
		{"ftp://example.com/i.png", ReasonScheme},
		{"file:///etc/passwd", ReasonScheme},
		{"gopher://example.com/", ReasonScheme},
		{"javascript:alert(1)", ReasonScheme},
		{"data:image/png;base64,AAAA", ReasonScheme}, // Fetch is http(s) only; Load takes data URLs
		{"http:example.com", ReasonURL},
		{"http:///i.png", ReasonURL},
		{"http://user:pw@example.com/i.png", ReasonURL},
		{"http://user@example.com/i.png", ReasonURL},
		{"http://example.com:0/", ReasonURL},
		{"http://example.com:99999/", ReasonURL},
		{"http://ex%C3%A4mple.com/", ReasonURL}, // unicode must come as punycode
		{"http://a..b/", ReasonURL},
		{"http://-x.example:80/", ReasonDNS}, // valid syntax, does not resolve
		{"http://exa mple.com/", ReasonURL},
		{"http://[::1/", ReasonURL},
		{"http://" + string(make([]byte, maxURLLen)), ReasonURL},
	} {
		t.Run(tc.url[:min(len(tc.url), 40)], func(t *testing.T) {
			_, err := f.Fetch(t.Context(), tc.url)
			wantReason(t, err, tc.want)
		})
	}
}
