package server

import (
	"net"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/config"
)

// writeDeadlineConn counts write deadline changes.
type writeDeadlineConn struct {
	net.Conn
	sets []time.Time
}

func (c *writeDeadlineConn) SetWriteDeadline(t time.Time) error {
	c.sets = append(c.sets, t)
	return nil
}

// A stream's writes move the client's write deadline once it has aged by
// the slack, not at every chunk; a new request moves it at once.
func TestExtendWrite_MovesTheDeadlineLazily(t *testing.T) {
	const d = 160 * time.Millisecond // slack: 10 ms
	cfg := &config.Config{}
	cfg.Timeouts.ClientWrite = config.Duration(d)
	ex := newExchange()
	ex.s = &Server{cfg: cfg}
	conn := &writeDeadlineConn{}
	ex.watch.conn = conn
	start := time.Now()
	for i := 0; i < 100; i++ {
		ex.extendWrite()
	}
	if n := len(conn.sets); n == 0 || n > 1+int(time.Since(start)/deadlineSlack(d)) {
		t.Fatalf("%d deadline changes for 100 writes in %v", n, time.Since(start))
	}
	time.Sleep(2 * deadlineSlack(d))
	before := time.Now()
	ex.extendWrite()
	if last := conn.sets[len(conn.sets)-1]; last.Before(before.Add(d - deadlineSlack(d))) {
		t.Fatalf("after a pause the deadline is %v from the write, want at least client_write − slack", last.Sub(before))
	}
	n := len(conn.sets)
	ex.stream.reset() // the next request on the connection
	ex.extendWrite()
	if len(conn.sets) != n+1 {
		t.Fatal("a new request did not move the deadline")
	}
}
