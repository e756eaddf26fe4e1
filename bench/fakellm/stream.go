package fakellm

import (
	"bufio"
	"net"

	"github.com/valyala/fasthttp"
)

// startStream sends a streaming response. For vLLM the headers go out at
// once (Starlette's StreamingResponse); Ollama sends them with the first
// chunk (gin).
func (s *Server) startStream(ctx *fasthttp.RequestCtx, sse bool, run func(w *bufio.Writer, conn net.Conn)) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	if sse {
		ctx.SetContentType("text/event-stream; charset=utf-8")
		ctx.Response.ImmediateHeaderFlush = true
	} else {
		ctx.SetContentType("application/x-ndjson")
	}
	conn := ctx.Conn()
	s.activeStreams.Add(1)
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.activeStreams.Add(-1)
		run(w, conn)
	})
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
