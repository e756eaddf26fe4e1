package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
)

func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{ErrNotFound, false},
		{fmt.Errorf("read user: %w", ErrConflict), false},
		{errors.New("Error 1064: syntax error"), false},
		{fmt.Errorf("read user: %w", ErrUnavailable), true},
		{fmt.Errorf("read user: %w", driver.ErrBadConn), true},
		{fmt.Errorf("read user: %w", context.DeadlineExceeded), true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("begin: %w", syscall.ECONNRESET), true},
	} {
		if got := Unavailable(tc.err); got != tc.want {
			t.Errorf("Unavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
