package server

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/outcome"
)

type recordObserver struct{ got []outcome.Outcome }

func (r *recordObserver) Observe(o *outcome.Outcome) { r.got = append(r.got, *o) }

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		return 0, errors.New("write: broken pipe")
	}
	k := min(len(p), w.n)
	w.n -= k
	return k, nil
}

// A large unary answer keeps its exchange, and so the user's quota
// ticket, until it is written; a write that fails (the client stopped
// reading: timeouts.client_write) or one fasthttp never makes finishes it
// as the client's leaving, and the ticket is done either way, once.
func TestAnswerBody_HoldsTheExchangeUntilWritten(t *testing.T) {
	server, client := tcpPair(t)
	defer client.Close()
	obs := &recordObserver{}
	s := newTestServer(t, nil)
	s.observers = []outcome.Observer{obs}
	body := bytes.Repeat([]byte("x"), deferAnswerBytes+1)

	for _, tc := range []struct {
		name   string
		run    func(b *answerBody) error
		status int
	}{
		{"written", func(b *answerBody) error { var w bytes.Buffer; _, err := b.WriteTo(&w); return err }, 200},
		{"write fails", func(b *answerBody) error { _, err := b.WriteTo(&failWriter{n: 1000}); return err }, statusClientClosed},
		{"never written", func(b *answerBody) error { return b.Close() }, statusClientClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs.got = nil
			ctx := new(fasthttp.RequestCtx)
			ex := newEx(s, nil)
			ex.watch.conn = server // the client connection the deadline is set on
			tk := &fakeTicket{}
			ex.ticket = tk
			ex.enc.Body = append(ex.enc.Body[:0], body...)
			if err := ex.setAnswer(ctx, ex.enc.Body); err != errHandedOff {
				t.Fatalf("setAnswer = %v, want the exchange handed off", err)
			}
			if tk.done != 0 {
				t.Fatal("the ticket was released before the answer was written")
			}
			b, ok := ctx.Response.BodyStream().(*answerBody)
			if !ok {
				t.Fatalf("body stream %T", ctx.Response.BodyStream())
			}
			_ = tc.run(b)
			_ = b.Close() // as fasthttp does after WriteTo: finishes nothing twice
			if tk.done != 1 || len(obs.got) != 1 || obs.got[0].Status != tc.status {
				t.Fatalf("ticket done %d times, outcomes %d (status %v), want once with %d", tk.done, len(obs.got), obs.got, tc.status)
			}
		})
	}
	// A small answer is set whole: nothing to hold.
	ctx, ex := new(fasthttp.RequestCtx), newEx(s, nil)
	ex.watch.conn = server
	if err := ex.setAnswer(ctx, []byte(`{"ok":true}`)); err != nil || string(ctx.Response.Body()) != `{"ok":true}` {
		t.Fatalf("small answer: %v %q", err, ctx.Response.Body())
	}
}

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
