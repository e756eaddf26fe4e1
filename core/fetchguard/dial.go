package fetchguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// resolve turns a dial host into the addresses to try, all of them
// allowed. A name whose answer holds any refused address is refused as a
// whole: a mixed answer is how DNS rebinding slips a private address past
// a check of "the first" one, and an honest public host has no reason to
// publish private addresses.
func (f *Fetcher) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	addr, name, err := parseHost(host)
	if err != nil {
		return nil, err
	}
	if addr.IsValid() {
		if !f.allowed(addr) {
			return nil, errForbidden(fmt.Errorf("address %v is %s", addr, refusedClass(addr)))
		}
		return []netip.Addr{addr.Unmap()}, nil
	}
	addrs, err := f.cfg.Resolver(ctx, name)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, newError(ReasonDNS, err, "image URL host could not be resolved")
	}
	if len(addrs) == 0 {
		return nil, newError(ReasonDNS, nil, "image URL host could not be resolved")
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if !f.allowed(a) {
			return nil, errForbidden(fmt.Errorf("%s resolves to %v, %s", name, a, refusedClass(a)))
		}
		out = append(out, a.Unmap())
	}
	return out, nil
}

// dialContext is the transport's only way out. It resolves once, checks,
// and connects to a checked IP literal, so the name is never looked up
// again between check and connect.
func (f *Fetcher) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, newError(ReasonURL, err, "image URL host is not valid")
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return nil, newError(ReasonURL, err, "image URL port is not valid")
	}
	addrs, err := f.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		c, err := f.dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// control checks the socket address once more just before connect, so no
// path through the dialer (a future change, a Happy Eyeballs fallback) can
// reach a refused address.
func (f *Fetcher) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return errForbidden(fmt.Errorf("dial %s %q: %w", network, address, err))
	}
	if !f.allowed(ap.Addr()) {
		return errForbidden(fmt.Errorf("dial %s %v: %s", network, ap, refusedClass(ap.Addr())))
	}
	return nil
}
