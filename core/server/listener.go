package server

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// limitListener serves at most max connections at once. A connection over
// the limit gets a plain 503 with Retry-After and is closed, so a flood of
// idle connections cannot exhaust memory or file descriptors.
type limitListener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused *atomic.Uint64
}

func newLimitListener(ln net.Listener, max int, refused *atomic.Uint64) net.Listener {
	return &limitListener{Listener: ln, max: int64(max), refused: refused}
}

const overloadResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 114\r\n\r\n" +
	`{"error":{"message":"the gateway has too many open connections, retry shortly","type":"server_error","code":null}}`

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			l.refused.Add(1)
			go func() {
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = c.Write([]byte(overloadResponse))
				_ = c.Close()
			}()
			continue
		}
		return &countedConn{Conn: c, l: l}, nil
	}
}

type countedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}
