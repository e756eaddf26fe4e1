package main

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/audit"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// stateCounts counts the audit's rows by state as a reader sees them
// (FINAL on ClickHouse).
type stateCounts func(t *testing.T) map[string]int

func chStateCounts(ch *testsvc.ClickHouse) stateCounts {
	return func(t *testing.T) map[string]int {
		conn := ch.Open(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rows, err := conn.Query(ctx, "SELECT state, count() FROM "+ch.Database+".requests FINAL GROUP BY state")
		if err != nil {
			if strings.Contains(err.Error(), "doesn't exist") {
				return map[string]int{}
			}
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var s string
			var n uint64
			if err := rows.Scan(&s, &n); err != nil {
				t.Fatal(err)
			}
			out[s] = int(n)
		}
		return out
	}
}

func sqliteStateCounts(path string) stateCounts {
	return func(t *testing.T) map[string]int {
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.Query(`SELECT state, count(*) FROM requests GROUP BY state`)
		if err != nil {
			if strings.Contains(err.Error(), "no such table") {
				return map[string]int{}
			}
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var s string
			var n int
			if err := rows.Scan(&s, &n); err != nil {
				t.Fatal(err)
			}
			out[s] = n
		}
		return out
	}
}

// Requests in flight (their backend slow to answer) when the gateway is
// SIGKILLed leave rows: started while the gateway runs (written at
// admission, before the backend answers), interrupted after it is
// started again on the same spool; none is lost or doubled.
func TestAuditGatewaySIGKILLInFlight(t *testing.T) {
	for _, sink := range []string{"embedded", "clickhouse"} {
		t.Run(sink, func(t *testing.T) {
			var ch *testsvc.ClickHouse
			if sink == "clickhouse" {
				ch = testsvc.StartClickHouse(t)
			}
			// The backend takes 20 s to its first token: requests stay
			// in flight until the kill.
			e := newKillEnvWith(t, ch, fakellm.Config{Engine: "vllm", Models: []string{killModel}, TTFT: 20 * time.Second})
			counts := sqliteStateCounts(e.embedded)
			if ch != nil {
				counts = chStateCounts(ch)
			}
			g := e.start()
			const inFlight = 4
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var wg sync.WaitGroup
			for i := range inFlight {
				wg.Add(1)
				go func() {
					defer wg.Done()
					body := `{"model":"` + killModel + `","messages":[{"role":"user","content":"hi"}],"stream":` + map[bool]string{true: "true", false: "false"}[i%2 == 0] + `}`
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.base+"/v1/chat/completions", strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+killAdminKey)
					req.Header.Set("Content-Type", "application/json")
					if resp, err := http.DefaultClient.Do(req); err == nil {
						resp.Body.Close()
					}
				}()
			}
			var got map[string]int
			if !testutil.Poll(60*time.Second, func() bool { got = counts(t); return got[audit.RowStarted] == inFlight }) {
				t.Fatalf("rows while %d requests are in flight: %v, want %d started\n%s", inFlight, got, inFlight, g.logs)
			}
			g.kill()
			cancel()
			wg.Wait()

			g = e.start()
			if !testutil.Poll(60*time.Second, func() bool { got = counts(t); return got[audit.RowInterrupted] == inFlight }) {
				t.Fatalf("rows after the restart: %v, want %d interrupted\n%s", got, inFlight, g.logs)
			}
			g.stop(t)
			if got = counts(t); len(got) != 1 {
				t.Errorf("rows after the restart: %v, want only %d interrupted", got, inFlight)
			}
		})
	}
}
