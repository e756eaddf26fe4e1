package fetchguard

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// A request's images share one Budget: once they would exceed it the
// next image is refused, before its body is read when its size is
// announced and within one read of the limit when it is not, so the
// bytes fetched stay near the budget however many images a request
// names (the gateway once fetched 80 MiB for a request it then refused).
// What a refused image took is given back; Release gives back the rest,
// in the gateway-wide parent too, whose own limit is a busy refusal.
func TestBudget_BoundsBytesFetched(t *testing.T) {
	const img, n, budget = 100 << 10, 8, 250 << 10
	srv := startServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		b := padded(img)
		if r.URL.Path == "/length" {
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			_, _ = w.Write(b)
			return
		}
		for len(b) > 0 { // no Content-Length: chunked
			k := min(len(b), 8<<10)
			_, _ = w.Write(b[:k])
			w.(http.Flusher).Flush()
			b = b[k:]
		}
	})
	for _, path := range []string{"/length", "/chunked"} {
		t.Run(path, func(t *testing.T) {
			f := newFetcher(t, Config{MaxBytes: 1 << 20, Timeout: 30 * time.Second}, nil, srv.prefix())
			gw := NewSharedBudget(1 << 30)
			b := NewBudget(budget, gw)
			// At once, as the gateway fetches a request's images; bodies
			// of unknown length one after the other, so that which of
			// them fit is not a race.
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Add(1)
				load := func() {
					defer wg.Done()
					_, errs[i] = f.LoadWithin(t.Context(), srv.URL+path+"?i="+strconv.Itoa(i), b)
				}
				if path == "/length" {
					go load()
				} else {
					load()
				}
			}
			wg.Wait()
			ok := 0
			for _, err := range errs {
				if err == nil {
					ok++
					continue
				}
				wantReason(t, err, ReasonTooLarge)
			}
			if ok != budget/img {
				t.Fatalf("%d images loaded, want %d (%v)", ok, budget/img, errs)
			}
			if b.Used() != int64(ok*img) || gw.Used() != b.Used() {
				t.Fatalf("budget holds %d, gateway %d, want %d", b.Used(), gw.Used(), ok*img)
			}
			// Announced sizes are refused unread; unknown ones stop within
			// a read of the budget, each of the n fetches at most.
			slack := int64(0)
			if path == "/chunked" {
				slack = n * (64 << 10)
			}
			if got := f.Fetched(); got > budget+slack {
				t.Fatalf("fetched %d bytes for a budget of %d", got, budget)
			}
			b.Release()
			if b.Used() != 0 || gw.Used() != 0 {
				t.Fatalf("after Release: budget %d, gateway %d", b.Used(), gw.Used())
			}
		})
	}
	t.Run("gateway budget is busy", func(t *testing.T) {
		f := newFetcher(t, Config{MaxBytes: 1 << 20, Timeout: 30 * time.Second}, nil, srv.prefix())
		gw := NewSharedBudget(150 << 10)
		first := NewBudget(1<<20, gw)
		if _, err := f.LoadWithin(t.Context(), srv.URL+"/length", first); err != nil {
			t.Fatal(err)
		}
		_, err := f.LoadWithin(t.Context(), srv.URL+"/length", NewBudget(1<<20, gw))
		wantReason(t, err, ReasonBusy)
		first.Release()
		if _, err := f.LoadWithin(t.Context(), srv.URL+"/length", NewBudget(1<<20, gw)); err != nil {
			t.Fatalf("after the first request gave its images back: %v", err)
		}
	})
}
