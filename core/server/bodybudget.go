package server

import (
	"errors"
	"io"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// The gateway-wide body budget (limits.max_buffered_body_bytes) counts
// the request body bytes all requests hold. A body of known length takes
// its length before a byte is read; a chunked body takes its bytes as
// they arrive, one read at a time, so it costs the budget what it sent,
// not the most it might send (a client announcing a chunked body and
// sending nothing once held a whole limits.max_body_bytes).

// chunkedRead bounds one read of a chunked body: the bytes one request
// may hold beyond its share of the budget while its reservation is
// checked.
const chunkedRead = 64 << 10

// errBufferFull: the gateway-wide body budget has no room for the bytes
// that arrived.
var errBufferFull = errors.New("gateway-wide body budget exhausted")

func errGatewayBusy() error {
	e := apierr.New(canon.ErrOverloaded, "gateway_busy", "the gateway is receiving too many large requests, retry shortly")
	e.RetryAfter = 1
	return e
}

// holdBody takes n bytes of the budget, or nothing when they do not fit.
func (s *Server) holdBody(n int64) bool {
	if s.buffered.Add(n) > s.cfg.Limits.MaxBufferedBodyBytes {
		s.buffered.Add(-n)
		return false
	}
	return true
}

// chunkedBody reads a chunked request body, counting each read's bytes
// against the budget on the exchange (bodyHeld, given back when it is
// released). A read whose bytes do not fit fails with errBufferFull.
type chunkedBody struct {
	r  io.Reader
	s  *Server
	ex *exchange
}

func (c *chunkedBody) Read(p []byte) (int, error) {
	if len(p) > chunkedRead {
		p = p[:chunkedRead]
	}
	n, err := c.r.Read(p)
	if n > 0 {
		if !c.s.holdBody(int64(n)) {
			return 0, errBufferFull
		}
		c.ex.bodyHeld += int64(n)
	}
	return n, err
}
