package fakellm

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"

	"github.com/valyala/fasthttp"
)

// startStream sends a streaming response, each send (an event, or the
// events a step writes together) as its own HTTP chunk, flushed, as vLLM
// (uvicorn) and Ollama (net/http, a Flush per event) do. (fasthttp's
// SetBodyStreamWriter would run the writer behind a pipe whose reader
// coalesces what piled up into one chunk: a gateway reading one chunk at
// a time would get batches real engines never send.) For vLLM the
// headers go out at once (Starlette's StreamingResponse); Ollama sends
// them with the first chunk (gin).
func (s *Server) startStream(ctx *fasthttp.RequestCtx, sse bool, run func(w *bufio.Writer, conn net.Conn)) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	if sse {
		ctx.SetContentType("text/event-stream; charset=utf-8")
		ctx.Response.ImmediateHeaderFlush = true
	} else {
		ctx.SetContentType("application/x-ndjson")
	}
	s.activeStreams.Add(1)
	ctx.SetBodyStream(&eventBody{s: s, run: run, conn: ctx.Conn()}, -1)
}

// eventBody is a stream's body: fasthttp calls WriteTo on the
// connection's goroutine (fasthttp.BodyWriterTo), where each Write is one
// HTTP chunk, flushed. run's bufio.Writer is as large as any event, so
// each Flush is one Write: one chunk.
type eventBody struct {
	s    *Server
	run  func(w *bufio.Writer, conn net.Conn)
	conn net.Conn
}

var errWriteToOnly = errors.New("fakellm: a stream body is written with WriteTo")

var eventWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

func (b *eventBody) Read([]byte) (int, error)  { return 0, errWriteToOnly }
func (b *eventBody) SupportsBodyWriteTo() bool { return true }

func (b *eventBody) WriteTo(w io.Writer) (int64, error) {
	run := b.run
	if run == nil {
		return 0, errWriteToOnly
	}
	b.run = nil
	defer b.s.activeStreams.Add(-1)
	cw := &countWriter{w: w}
	bw := eventWriters.Get().(*bufio.Writer)
	bw.Reset(cw)
	run(bw, b.conn)
	_ = bw.Flush()
	bw.Reset(nil)
	eventWriters.Put(bw)
	return cw.n, cw.err
}

// Close counts a stream whose body fasthttp never wrote.
func (b *eventBody) Close() error {
	if b.run != nil {
		b.run = nil
		b.s.activeStreams.Add(-1)
	}
	return nil
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// streamer writes one chunk at a time and notices a vanished client.
type streamer struct {
	w    *bufio.Writer
	c    *call
	conn net.Conn
	bp   *[]byte
}

func (st *streamer) buf() []byte { return (*st.bp)[:0] }

// send writes b and flushes it to the client. It returns false when the
// client has gone.
func (st *streamer) send(b []byte) bool {
	*st.bp = b
	if _, err := st.w.Write(b); err != nil {
		st.c.cancelled = true
		return false
	}
	if err := st.w.Flush(); err != nil {
		st.c.cancelled = true
		return false
	}
	return true
}

// dropConn closes the connection mid-stream (fault injection).
func (st *streamer) dropConn() {
	st.c.cancelled = true
	_ = st.w.Flush()
	_ = st.conn.Close()
}

func dropPoint(r *genRequest, total int) int {
	if r.fault != faultDrop {
		return -1
	}
	return total / 2
}
