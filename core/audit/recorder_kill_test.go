package audit

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// childEnv makes the test binary the SIGKILL test's child (see TestMain).
const childEnv = "MINDROUTER_AUDIT_CHILD"

// runChild records events 0, 1, 2, … as fast as a busy gateway would,
// printing "spooled K written W" every few milliseconds, until killed.
// Events are spooled in order, so K means events 0..K-1 are on disk.
func runChild() int {
	r, err := New(Options{Dir: os.Getenv(childEnv), FlushEvery: 20 * time.Millisecond, BatchRows: 500,
		ClickHouse: &CHOptions{Addr: []string{os.Getenv(childEnv + "_ADDR")}, Database: os.Getenv(childEnv + "_DB")},
		Replica:    "child", Log: quietLog()})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	go func() { _ = r.Run(context.Background()) }()
	var observed atomic.Int64
	go func() {
		for range time.Tick(2 * time.Millisecond) {
			fmt.Printf("spooled %d written %d observed %d\n", r.Spooled(), r.Written(), observed.Load())
		}
	}()
	for i := 0; ; i++ {
		r.Observe(testOutcome(i))
		observed.Store(int64(i + 1))
		if i%20 == 0 { // at most about 20,000 a second
			time.Sleep(time.Millisecond)
		}
	}
}

// The gateway is SIGKILLed under load and started again on the same
// spool: every event that was spooled before the kill is in ClickHouse
// exactly once, and nothing is there twice.
func TestRecorderSIGKILL(t *testing.T) {
	chs := testsvc.StartClickHouse(t)
	conn := chs.Open(t)
	dir := t.TempDir()
	for round := range 2 { // kill it twice, at different moments
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+dir, childEnv+"_ADDR="+chs.Addr, childEnv+"_DB="+chs.Database)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var spooled, written, observed int64
		target := int64(1500 * (round + 1))
		sc := bufio.NewScanner(out)
		deadline := time.Now().Add(60 * time.Second)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 6 || f[0] != "spooled" {
				t.Fatalf("child: %s", sc.Text())
			}
			spooled, _ = strconv.ParseInt(f[1], 10, 64)
			written, _ = strconv.ParseInt(f[3], 10, 64)
			observed, _ = strconv.ParseInt(f[5], 10, 64)
			if written >= target && spooled > written || time.Now().After(deadline) {
				break
			}
		}
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		_ = cmd.Wait()
		t.Logf("round %d: killed with %d observed, %d spooled, %d written", round, observed, spooled, written)
		if written < target {
			t.Fatalf("the child wrote only %d events in 60s", written)
		}
		// The restarted gateway sends the rest.
		r, err := New(Options{Dir: dir, ClickHouse: chOptions(chs), FlushEvery: 20 * time.Millisecond, Log: testLog(t)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { _ = r.Run(ctx); close(ran) }()
		waitRunning(t, r)
		for wait := time.Now().Add(60 * time.Second); r.Pending() > 0 && time.Now().Before(wait); {
			time.Sleep(10 * time.Millisecond)
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = r.Close(cctx)
		ccancel()
		cancel()
		<-ran
		if err != nil || r.Pending() != 0 {
			t.Fatalf("restart did not drain the spool: %v, %d pending", err, r.Pending())
		}
		rows, ids := counts(t, conn, chs.Database)
		var below uint64
		qctx, qcancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = conn.QueryRow(qctx, "SELECT count() FROM "+chs.Database+".requests WHERE request_id < ?",
			fmt.Sprintf("req-%08d", spooled)).Scan(&below)
		qcancel()
		if err != nil {
			t.Fatal(err)
		}
		// Events observed after the last report may be stored too: the
		// child kept going until the kill.
		t.Logf("round %d: %d rows, %d distinct; %d of the %d spooled", round, rows, ids, below, spooled)
		if rows != ids {
			t.Errorf("round %d: %d rows for %d request ids: duplicates", round, rows, ids)
		}
		if below != uint64(spooled) {
			t.Errorf("round %d: %d of the %d spooled events are stored", round, below, spooled)
		}
		// The next round's child starts at event 0 again: clear the
		// table so that its ids count afresh.
		if err := conn.Exec(context.Background(), "TRUNCATE TABLE "+chs.Database+".requests"); err != nil {
			t.Fatal(err)
		}
	}
}
