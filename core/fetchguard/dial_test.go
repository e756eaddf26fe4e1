package fetchguard

import (
	"net"
	"testing"
)

// TestDialerControl checks the last line of defence on its own: the
// dialer's Control hook refuses a refused socket address even when the
// caller skipped the resolve step.
func TestDialerControl(t *testing.T) {
	allowedSrv := startServer(t, "127.0.0.1", servePNG)
	refusedSrv := startServer(t, "127.0.0.2", servePNG)
	f := newFetcher(t, Config{}, nil, allowedSrv.prefix())

	c, err := f.dialer.DialContext(t.Context(), "tcp", allowedSrv.addr().String())
	if err != nil {
		t.Fatalf("allowed address: %v", err)
	}
	c.Close()
	for _, addr := range []string{refusedSrv.addr().String(), "[::ffff:127.0.0.2]:" + itoa(refusedSrv.addr().Port())} {
		c, err = f.dialer.DialContext(t.Context(), "tcp", addr)
		if c != nil {
			c.Close()
		}
		wantReason(t, err, ReasonForbiddenAddress)
	}
	// The transport's dial function refuses before dialing at all.
	_, err = f.dialContext(t.Context(), "tcp", refusedSrv.addr().String())
	wantReason(t, err, ReasonForbiddenAddress)
	_, err = f.dialContext(t.Context(), "tcp", net.JoinHostPort("localhost", "80"))
	wantReason(t, err, ReasonForbiddenAddress)
	_, err = f.dialContext(t.Context(), "tcp", "127.0.0.1:0")
	wantReason(t, err, ReasonURL)
}
