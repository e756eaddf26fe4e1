package fetchguard

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestRedirectIntoRefusedAddress: the origin (127.0.0.1) is allowed, the
// target (127.0.0.2, another loopback address) is not. The same target is
// reachable once allowed, so the refusal is the guard's doing.
func TestRedirectIntoRefusedAddress(t *testing.T) {
	inner := startServer(t, "127.0.0.2", servePNG)
	innerPort := strconv.Itoa(int(inner.addr().Port()))
	v6 := startServer(t, "::1", servePNG)
	var location string
	origin := startServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	res := &resolver{table: map[string][]string{"inner.example": {"127.0.0.2"}}}
	fetch := func(f *Fetcher, to string) error {
		location = to
		_, err := f.Fetch(t.Context(), origin.URL+"/?to="+strings.ReplaceAll(location, "&", "%26"))
		return err
	}

	f := newFetcher(t, Config{}, res, origin.prefix())
	for _, tc := range []struct {
		to   string
		want Reason
	}{
		{inner.URL + "/i.png", ReasonForbiddenAddress},
		{"http://inner.example:" + innerPort + "/i.png", ReasonForbiddenAddress},
		{v6.URL + "/i.png", ReasonForbiddenAddress},
		{"http://[::ffff:127.0.0.2]:" + innerPort + "/", ReasonForbiddenAddress},
		{"http://169.254.169.254/latest/meta-data/", ReasonForbiddenAddress},
		{"http://metadata.google.internal/computeMetadata/v1/", ReasonForbiddenAddress},
		{"http://2130706434:" + innerPort + "/", ReasonURL},
		{"http://user:pw@127.0.0.2:" + innerPort + "/", ReasonURL},
		{"ftp://127.0.0.2/i.png", ReasonScheme},
		{"file:///etc/passwd", ReasonScheme},
	} {
		t.Run(tc.to, func(t *testing.T) {
			wantReason(t, fetch(f, tc.to), tc.want)
		})
	}
	if n := inner.hits.Load() + v6.hits.Load(); n != 0 {
		t.Fatalf("refused targets got %d requests", n)
	}

	open := newFetcher(t, Config{}, res, origin.prefix(), inner.prefix(), v6.prefix())
	for _, to := range []string{inner.URL + "/i.png", "http://inner.example:" + innerPort + "/i.png", v6.URL + "/i.png"} {
		if err := fetch(open, to); err != nil {
			t.Errorf("allowed redirect to %s: %v", to, err)
		}
	}
	if inner.hits.Load() != 2 || v6.hits.Load() != 1 {
		t.Errorf("allowed targets got %d and %d requests, want 2 and 1", inner.hits.Load(), v6.hits.Load())
	}
}

func TestRedirectLimit(t *testing.T) {
	// /hop/N redirects to /hop/N-1; /hop/0 is the image.
	srv := startServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if n == 0 {
			servePNG(w, r)
			return
		}
		http.Redirect(w, r, "/hop/"+strconv.Itoa(n-1), http.StatusMovedPermanently)
	})
	for _, tc := range []struct {
		max, hops int
		ok        bool
	}{
		{0, 3, true}, // default 3
		{0, 4, false},
		{1, 1, true},
		{1, 2, false},
		{-1, 0, true}, // none
		{-1, 1, false},
	} {
		f := newFetcher(t, Config{MaxRedirects: tc.max}, nil, srv.prefix())
		_, err := f.Fetch(t.Context(), srv.URL+"/hop/"+strconv.Itoa(tc.hops))
		if tc.ok {
			if err != nil {
				t.Errorf("max %d, %d hops: %v", tc.max, tc.hops, err)
			}
			continue
		}
		wantReason(t, err, ReasonRedirects)
	}
}
