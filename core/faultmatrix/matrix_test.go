//go:build faults

package faultmatrix

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

var (
	update = flag.Bool("update", false, "write docs/faults.md from this run's figures")
	only   = flag.String("faults", "", "comma-separated fault names to run (default: all; -update needs all)")
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	testsvc.StopAll()
	if build.dir != "" {
		_ = os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// The load: 8 clients, 4 per replica, half of the requests streamed.
const clients = 8

// acceptGrace: an answer whose audit event was not yet fsynced when its
// replica was SIGKILLed is lost (core/audit's promise covers what the
// spool accepted, a few milliseconds after the answer); answers of the
// killed replica this close to the kill may be missing from the audit.
const acceptGrace = 2 * time.Second

// quotaTick is core/quota's Run tick with the default quota.lease (1 s):
// Lease/4. What a replica charged in its last tick before a SIGKILL is not
// pushed, and core/quota documents that loss.
const quotaTick = 250 * time.Millisecond

// persistInterval is the matrix's quota.persist_interval (env_test.go;
// the default is 10 s). A Redis restarted empty loses what core/quota
// documents: the charges pushed to Redis since the last persist, those of
// answers up to a persist interval and a Run tick before the kill (one
// more tick for the push of an answer's charge).
const persistInterval = time.Second

// fault is one row of the matrix: how it is injected and restored, how
// long it lasts, and its bounds.
type fault struct {
	name, what string
	hold       time.Duration
	inject     func(t *testing.T, c *cluster)
	restore    func(t *testing.T, c *cluster)
	// maxErrors bounds the client errors the fault may cause, and why.
	maxErrors int
	errorsWhy string
	// maxRecovery bounds the time from the restore to the last client
	// error.
	maxRecovery time.Duration
	// killed is the replica the fault kills (-1: none): its answers of the
	// last acceptGrace before the kill may be missing from the audit.
	killed int
	// redisEmptied: the fault restarts Redis empty, and the quota may
	// lose what core/quota documents (persistInterval).
	redisEmptied bool
	// waitsOn names what a bound here waits on when it fails (an issue-19
	// item another change fixes), for the table.
	waitsOn string
	// backInService reports whether what the fault hurt serves again
	// ("full" in the table); nil: both replicas report every breaker
	// closed.
	backInService func(c *cluster) bool
}

func faults() []fault {
	hang, storm := pace, pace
	hang.HangRate = 1
	storm.ErrorRate = 1
	pause := func(d time.Duration) func(t *testing.T, c *cluster) {
		return func(t *testing.T, c *cluster) {
			rdb := redis.NewClient(&redis.Options{Addr: c.redis.Addr})
			defer rdb.Close()
			if err := rdb.Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err(); err != nil {
				t.Errorf("CLIENT PAUSE: %v", err)
			}
		}
	}
	nothing := func(*testing.T, *cluster) {}
	// A restored backend serves again once the scheduler sent it a
	// request (its half-open probe, when its breaker opened) that it
	// completed.
	b3Serves := func(c *cluster) bool { return c.backends[2].served() > 0 }
	return []fault{
		{name: "backend-kill", backInService: b3Serves,
			what: "one of three backends killed (its connections closed), restarted after 3 s",
			hold: 3 * time.Second, killed: -1,
			inject:    func(t *testing.T, c *cluster) { c.backends[2].kill() },
			restore:   func(t *testing.T, c *cluster) { c.backends[2].swap(t, pace) },
			maxErrors: 4, errorsWhy: "streams already relaying on it when it died break (they cannot be retried)",
			maxRecovery: time.Second},
		{name: "backend-hang", backInService: b3Serves,
			what: "one backend accepts requests and never answers for 4 s",
			hold: 4 * time.Second, killed: -1,
			inject:    func(t *testing.T, c *cluster) { c.backends[2].swap(t, hang) },
			restore:   func(t *testing.T, c *cluster) { c.backends[2].swap(t, pace) },
			maxErrors: 10, errorsWhy: "non-streamed requests sent to it before its breaker opens time out (timeouts.request 4 s; not retried: the backend may be generating)",
			maxRecovery: 5 * time.Second},
		{name: "backend-5xx", backInService: b3Serves,
			what: "one backend answers 500 to everything for 3 s",
			hold: 3 * time.Second, killed: -1,
			inject:    func(t *testing.T, c *cluster) { c.backends[2].swap(t, storm) },
			restore:   func(t *testing.T, c *cluster) { c.backends[2].swap(t, pace) },
			maxErrors: 1, errorsWhy: "every failed attempt is retried on a healthy backend (item 17)",
			maxRecovery: time.Second},
		{name: "redis-kill", what: "Redis SIGKILLed, restarted empty after 3 s",
			hold: 3 * time.Second, killed: -1, redisEmptied: true,
			inject:    func(t *testing.T, c *cluster) { c.redis.Stop() },
			restore:   func(t *testing.T, c *cluster) { c.redis.Restart() },
			maxErrors: 2, errorsWhy: "requests in the call that finds Redis gone; then quota.redis_down local",
			maxRecovery: 2 * time.Second},
		{name: "redis-pause", what: "Redis stalled by CLIENT PAUSE 2 s (calls time out, then run)",
			hold: 3 * time.Second, killed: -1,
			inject: pause(2 * time.Second), restore: nothing,
			maxErrors: 2, errorsWhy: "requests whose quota call times out",
			maxRecovery: 2 * time.Second},
		{name: "redis-sigstop", what: "Redis frozen (SIGSTOP) for 3 s, its data kept",
			hold: 3 * time.Second, killed: -1,
			inject:    func(t *testing.T, c *cluster) { c.redis.Freeze() },
			restore:   func(t *testing.T, c *cluster) { c.redis.Thaw() },
			maxErrors: 2, errorsWhy: "requests whose quota call times out",
			maxRecovery: 2 * time.Second},
		{name: "mariadb-kill", what: "MariaDB SIGKILLed, restarted on its data after 3 s",
			hold: 3 * time.Second, killed: -1,
			inject:    func(t *testing.T, c *cluster) { testsvc.KillMariaDB(t) },
			restore:   func(t *testing.T, c *cluster) { testsvc.RestartMariaDB(t) },
			maxErrors: 0, errorsWhy: "keys are cached; inference reads nothing from the store",
			maxRecovery: 0},
		{name: "clickhouse-down", what: "ClickHouse SIGKILLed, started again after 4 s",
			hold: 4 * time.Second, killed: -1,
			inject:    func(t *testing.T, c *cluster) { c.ch.Stop() },
			restore:   func(t *testing.T, c *cluster) { c.ch.Start(t) },
			maxErrors: 0, errorsWhy: "the audit spools locally meanwhile",
			maxRecovery: 0},
		{name: "replica-kill", what: "replica a SIGKILLed, restarted after 2 s (its spool replayed)",
			hold: 2 * time.Second, killed: 0,
			inject:    func(t *testing.T, c *cluster) { c.replicas[0].kill() },
			restore:   func(t *testing.T, c *cluster) { c.replicas[0].start() },
			maxErrors: clients / 2, errorsWhy: "the killed replica's requests in flight (one per client of it); new ones go to the other replica",
			maxRecovery: 0, waitsOn: "no issue-19 item: an undercharge beyond core/quota's documented loss (one Run tick of the killed replica)"},
	}
}

// row is one fault's figures.
type row struct {
	f                  fault
	requests, errors   int
	recovery           time.Duration // restore to the last client error
	full               time.Duration // restore to every breaker closed on both replicas
	missing, dup, late int           // audit: answered but absent, stored twice, absent but within acceptGrace of a kill
	charged, delivered int64
	drift              float64 // (charged − delivered) / delivered
	// lossAllowed is, for a replica kill, what core/quota documents a
	// dead replica may lose: its charges of the last Run tick (Lease/4)
	// before the kill, not yet pushed; for Redis restarted empty, the
	// charges pushed since the last persist (persistInterval).
	lossAllowed int64
	firstErr    string
	failed      []string
}

func TestFaultMatrix(t *testing.T) {
	start := time.Now()
	c := startCluster(t)
	t.Logf("cluster up in %v", time.Since(start).Round(time.Second))
	var rows []row
	for _, f := range faults() {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), f.name) {
			continue
		}
		r := runFault(t, c, f)
		rows = append(rows, r)
		t.Logf("%-16s %4d requests, %2d errors (≤ %d), recovery %v (≤ %v), full capacity after %v, audit missing %d dup %d, quota %d charged / %d delivered (%+.2f %%, loss allowed %d) %s",
			f.name, r.requests, r.errors, f.maxErrors, r.recovery.Round(10*time.Millisecond), f.maxRecovery,
			r.full.Round(100*time.Millisecond), r.missing, r.dup, r.charged, r.delivered, 100*r.drift, r.lossAllowed, strings.Join(r.failed, "; "))
		if n, err := c.activeParts(); err == nil {
			t.Logf("%-16s clickhouse: %d active parts of the requests table", f.name, n)
		}
		for _, msg := range r.failed {
			t.Errorf("%s: %s", f.name, msg)
		}
		if len(r.failed) > 0 {
			t.Logf("%s: replica logs (warnings and errors):\na:\n%s\nb:\n%s", f.name, c.replicas[0].logTail(), c.replicas[1].logTail())
		}
	}
	t.Logf("matrix ran in %v", time.Since(start).Round(time.Second))
	if *update && *only == "" {
		writeTable(t, rows, time.Since(start))
	}
}

// runFault runs f under the load and checks its bounds.
func runFault(t *testing.T, c *cluster, f fault) row {
	r := row{f: f}
	used0 := c.tokensUsed(t)
	l := startLoad(c, clients)
	waitAnswered(t, l, 20, 30*time.Second)
	injected := time.Now()
	f.inject(t, c)
	time.Sleep(f.hold) // the fault's duration, under load
	restored := time.Now()
	f.restore(t, c)
	// Under load until what the fault hurt serves again, and at least 3 s.
	back := f.backInService
	if back == nil {
		back = (*cluster).breakersClosed
	}
	for deadline := restored.Add(60 * time.Second); r.full == 0; time.Sleep(100 * time.Millisecond) {
		if back(c) {
			r.full = time.Since(restored)
		} else if time.Now().After(deadline) {
			r.full = time.Since(restored)
			r.failed = append(r.failed, "not back in service 60 s after the restore")
		}
	}
	for time.Since(restored) < 3*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	waitAnswered(t, l, 20, 30*time.Second)
	res := l.halt()

	ids := map[string]result{}
	var lastErr time.Time
	for _, x := range res {
		r.requests++
		if x.ok {
			ids[x.id] = x
			r.delivered += x.tokens
			continue
		}
		r.errors++
		if r.firstErr == "" {
			r.firstErr = x.err.Error()
		}
		if x.at.After(lastErr) {
			lastErr = x.at
		}
	}
	for _, x := range res {
		if !x.ok {
			t.Logf("%-16s client error %+.2fs from the restore (replica %d): %v", f.name, x.at.Sub(restored).Seconds(), x.replica, x.err)
		}
	}
	if lastErr.After(restored) {
		r.recovery = lastErr.Sub(restored)
	}
	if r.errors > f.maxErrors {
		r.failed = append(r.failed, fmt.Sprintf("%d client errors, bound %d (%s); first: %s", r.errors, f.maxErrors, f.errorsWhy, r.firstErr))
	}
	if r.recovery > f.maxRecovery {
		r.failed = append(r.failed, fmt.Sprintf("last client error %v after the restore, bound %v", r.recovery.Round(time.Millisecond), f.maxRecovery))
	}

	// The audit: every answered request exactly once (those of a killed
	// replica's last acceptGrace excepted from "missing").
	excused := func(x result) bool {
		return f.killed >= 0 && x.replica == f.killed && x.at.After(injected.Add(-acceptGrace)) && !x.at.After(injected)
	}
	var counts map[string]uint64
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		var err error
		counts, err = c.storedCounts(t)
		missing := 0
		if err == nil {
			for id, x := range ids {
				if counts[id] == 0 && !excused(x) {
					missing++
				}
			}
		}
		if err == nil && missing == 0 || time.Now().After(deadline) {
			break
		}
	}
	for id, x := range ids {
		switch n := counts[id]; {
		case n == 0 && excused(x):
			r.late++
		case n == 0:
			r.missing++
		case n > 1:
			r.dup++
		}
	}
	if r.missing > 0 || r.dup > 0 {
		r.failed = append(r.failed, fmt.Sprintf("audit: %d answered requests missing, %d stored more than once (of %d)", r.missing, r.dup, len(ids)))
	}

	// The quota: what the user was charged over the fault against what the
	// answers delivered.
	r.charged = c.tokensUsed(t) - used0
	if r.delivered > 0 {
		r.drift = float64(r.charged-r.delivered) / float64(r.delivered)
	}
	if f.killed >= 0 {
		for _, x := range ids {
			if x.replica == f.killed && x.at.After(injected.Add(-quotaTick)) && !x.at.After(injected) {
				r.lossAllowed += x.tokens
			}
		}
	}
	slack := int64(math.Ceil(0.01 * float64(r.delivered)))
	if f.redisEmptied {
		for _, x := range ids {
			if x.at.After(injected.Add(-persistInterval-2*quotaTick)) && !x.at.After(injected) {
				r.lossAllowed += x.tokens
			}
		}
	}
	if r.charged > r.delivered+slack || r.charged < r.delivered-slack-r.lossAllowed {
		less := ""
		switch {
		case f.killed >= 0:
			less = fmt.Sprintf(", less the killed replica's unpushed last tick: %d tokens", r.lossAllowed)
		case f.redisEmptied:
			less = fmt.Sprintf(", less the charges pushed since the last persist: %d tokens", r.lossAllowed)
		}
		r.failed = append(r.failed, fmt.Sprintf("quota charged %d tokens for %d delivered (%+.2f %%, bound ±1 %%%s)",
			r.charged, r.delivered, 100*r.drift, less))
	}
	if r.requests-r.errors < 40 {
		r.failed = append(r.failed, fmt.Sprintf("only %d requests answered: the load did not run", r.requests-r.errors))
	}
	return r
}

// waitAnswered waits until the load has n more answers.
func waitAnswered(t *testing.T, l *load, n int, limit time.Duration) {
	t.Helper()
	want := l.answered() + n
	for deadline := time.Now().Add(limit); l.answered() < want; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			l.mu.Lock()
			var last []string
			for i := max(len(l.res)-3, 0); i < len(l.res); i++ {
				if e := l.res[i].err; e != nil {
					last = append(last, e.Error())
				}
			}
			l.mu.Unlock()
			t.Fatalf("only %d of %d answers in %v (last errors %q); replica logs:\na:\n%s\nb:\n%s", l.answered(), want, limit,
				last, l.c.replicas[0].logTail(), l.c.replicas[1].logTail())
		}
	}
}

// breakersClosed reports whether both replicas say every backend's
// circuit breaker is closed (mindrouter_backend_breaker_open 0).
func (c *cluster) breakersClosed() bool {
	for _, r := range c.replicas {
		req, _ := http.NewRequest("GET", r.base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+adminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "mindrouter_backend_breaker_open{") && !strings.HasSuffix(line, " 0") {
				return false
			}
		}
	}
	return true
}

// writeTable writes docs/faults.md from the run.
func writeTable(t *testing.T, rows []row, took time.Duration) {
	var b strings.Builder
	b.WriteString(`# Fault matrix

Generated by ` + "`make test-faults UPDATE=1`" + ` (core/faultmatrix): do not edit by hand.

Two gateway replicas (the real binary, child processes) share one MariaDB (store), one Redis (quota,
key revocation, scheduler fleet) and one ClickHouse (audit), in front of three simulated vLLM backends
(bench/fakellm, max_concurrent 4 each). Eight clients (four per replica; a client whose replica refuses
the connection sends to the other, as a load balancer would) alternate streamed and non-streamed chat
requests while one fault at a time is injected, held, and restored. The matrix shortens the breaker
cool-down (2 s), the stream attempt timeout (2 s), the request timeout (4 s) and the quota's persist
interval (1 s) so that recovery and a Redis restart's documented loss are measured in seconds;
everything else is the default configuration.

Per fault: **errors** are client requests that did not get a complete answer (bound: the fault's own);
**recovery** is the time from the restore to the last client error (bound); **full** is the time from
the restore until what the fault hurt serves again (a restored backend completed a request: its breaker's
probe, when it had opened; otherwise both replicas report every breaker closed); **audit** counts answered requests missing
from ClickHouse and stored twice after the spools drained; **drift** is the quota charged over the
fault against the tokens the answers reported, (charged − delivered) / delivered (bound ±1 %; for the
replica kill also less what core/quota documents a SIGKILLed replica loses: its charges of the last Run
tick, Lease/4, not yet pushed; for Redis restarted empty less what it documents a Redis restart loses:
the charges pushed since the last persist, those of answers up to quota.persist_interval (1 s here) and
two Run ticks before the kill; either given in parentheses).
`)
	fmt.Fprintf(&b, "\nLast run: %s, %d CPUs, %v in all.\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), took.Round(time.Second))
	b.WriteString("| fault | what | requests | errors (bound) | recovery (bound) | full | audit missing / dup | charged / delivered | drift | status |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		status := "pass"
		if len(r.failed) > 0 {
			status = "**FAIL**: " + strings.Join(r.failed, "; ")
			if r.f.waitsOn != "" {
				status += " (waits on " + r.f.waitsOn + ")"
			}
		}
		status = strings.ReplaceAll(status, "|", "/")
		allowed := ""
		if r.f.killed >= 0 || r.f.redisEmptied {
			allowed = fmt.Sprintf(" (−%d)", r.lossAllowed)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d (%d) | %v (%v) | %v | %d / %d | %d / %d%s | %+.2f %% | %s |\n",
			r.f.name, r.f.what, r.requests, r.errors, r.f.maxErrors, r.recovery.Round(10*time.Millisecond), r.f.maxRecovery,
			r.full.Round(100*time.Millisecond), r.missing, r.dup, r.charged, r.delivered, allowed, 100*r.drift, status)
	}
	b.WriteString("\nWhy each bound:\n\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "- %s: %s.\n", r.f.name, r.f.errorsWhy)
	}
	path := filepath.Join("..", "..", "docs", "faults.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}
