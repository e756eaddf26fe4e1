package server

import (
	"io"
	"time"

	"github.com/valyala/fasthttp"
)

// Writes to a client are bounded one at a time (timeouts.client_write):
// a client that reads nothing of its answer for that long loses its
// connection. fasthttp's own WriteTimeout (set to the same) bounds a
// response written whole from the handler's return; a streamed answer's
// relay and a large unary answer's writer (answerBody) move the
// deadline before each write, so a long answer to a client that keeps
// reading is never cut, while one that stops reading frees, within the
// timeout, what its answer holds: a stream's backend slot, the quota
// ticket (requests in flight count until the answer is written) and the
// buffered answer.

// deferAnswerBytes: a unary answer larger than this is written by
// answerBody, which keeps the exchange (its ticket, its buffers) until
// the answer is written. A smaller one is handed to fasthttp whole and
// the exchange finished at once: it fits the socket buffers of a client
// that does not read, so holding the ticket for it would bound nothing.
const deferAnswerBytes = 64 << 10

// answerPiece is one write of a deferred answer: the deadline moves
// before each.
const answerPiece = 64 << 10

// extendWrite moves the client connection's write deadline to
// timeouts.client_write from now, before a write of an answer. It moves
// it only once the last one set has aged by deadlineSlack: a deadline
// change is a runtime timer change, which a stream's every event paid
// for; so a write is bounded by between client_write − slack and
// client_write.
func (ex *exchange) extendWrite() {
	c := ex.watch.conn
	if c == nil {
		return
	}
	d := ex.s.cfg.Timeouts.ClientWrite.D()
	if now := time.Now(); ex.wdl.Sub(now) < d-deadlineSlack(d) {
		ex.wdl = now.Add(d)
		_ = c.SetWriteDeadline(ex.wdl)
	}
}

// deadlineSlack is how much a moved deadline may age before it is moved
// again: a sixteenth of the timeout, at most a second.
func deadlineSlack(d time.Duration) time.Duration { return min(d/16, time.Second) }

// setAnswer makes body the response: at once when it is small, else
// through answerBody, which finishes the exchange once it is written
// (errHandedOff: the caller no longer owns ex).
func (ex *exchange) setAnswer(ctx *fasthttp.RequestCtx, body []byte) error {
	if len(body) <= deferAnswerBytes || ex.watch.conn == nil {
		ctx.SetBody(body)
		return nil
	}
	if ex.s.keep > 0 {
		ex.keepResponse(body) // the audit's copy: finish has no ctx then
	}
	if ex.watch.stole {
		ctx.SetConnectionClose()
	}
	ctx.SetBodyStream(&answerBody{ex: ex, body: body}, len(body))
	return errHandedOff
}

// answerBody writes a large unary answer (fasthttp.BodyWriterTo, on the
// connection's goroutine) and then finishes its exchange. Allocated per
// answer, like relayBody: fasthttp calls Close after WriteTo, when the
// exchange may already serve another request.
type answerBody struct {
	ex   *exchange // nil once WriteTo or Close finished it
	body []byte    // ex.enc.Body
}

func (b *answerBody) Read([]byte) (int, error)  { return 0, errRelayRead }
func (b *answerBody) SupportsBodyWriteTo() bool { return true }

func (b *answerBody) WriteTo(w io.Writer) (int64, error) {
	ex := b.ex
	if ex == nil {
		return 0, errRelayRead
	}
	b.ex = nil
	var (
		n   int
		err error
	)
	for n < len(b.body) && err == nil {
		ex.extendWrite()
		var m int
		m, err = w.Write(b.body[n:min(n+answerPiece, len(b.body))])
		n += m
	}
	if err != nil {
		ex.clientLeft()
	}
	ex.s.finish(nil, ex)
	return int64(n), err
}

// Close finishes the exchange when fasthttp never wrote the body.
func (b *answerBody) Close() error {
	if ex := b.ex; ex != nil {
		b.ex = nil
		ex.clientLeft()
		ex.s.finish(nil, ex)
	}
	return nil
}

// clientLeft records an answer the client did not take.
func (ex *exchange) clientLeft() {
	ex.s.met.disconnects.Add(1)
	ex.out.ClientGone = true
	if ex.out.Status == fasthttp.StatusOK {
		ex.out.Status = statusClientClosed
	}
}
