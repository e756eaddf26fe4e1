package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"
)

// ErrUnavailable marks an error an implementation knows to mean that the
// database could not be reached or could not serve the call now (a lost
// connection, a server shutting down, too many connections, a lock wait
// that timed out): the same call may succeed shortly.
var ErrUnavailable = errors.New("store: unavailable")

// Unavailable reports whether err means that the store could not be
// reached or could not answer in time, rather than that the call was
// wrong: callers answer it 503 with Retry-After instead of 500. It
// recognises ErrUnavailable and, for implementations that do not mark
// their errors, database/sql's and the network's own signs of a lost or
// refused connection and a deadline that ran out.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}
