package fakellm

import (
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// The peak counts requests being served, queued for an engine slot or
// not, and ResetPeak restarts it from those in progress.
func TestPeakConcurrent(t *testing.T) {
	s, url := startServer(t, Config{MaxConcurrent: 1, TTFT: 150 * time.Millisecond})
	send := func(n int) {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(chatReq))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		waitFor(t, "the requests to arrive", 5*time.Second, func() bool { return s.Stats().Concurrent == int64(n) })
		wg.Wait()
	}
	send(3)
	if st := s.Stats(); st.Concurrent != 0 || st.PeakConcurrent != 3 {
		t.Fatalf("after 3 at once: concurrent %d peak %d, want 0 and 3", st.Concurrent, st.PeakConcurrent)
	}
	s.ResetPeak()
	send(2)
	if st := s.Stats(); st.Concurrent != 0 || st.PeakConcurrent != 2 {
		t.Fatalf("after a reset and 2 at once: concurrent %d peak %d, want 0 and 2", st.Concurrent, st.PeakConcurrent)
	}
}
