package fetchguard

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultMaxBytes     = 10 << 20
	DefaultTimeout      = 10 * time.Second
	DefaultMaxRedirects = 3
	// maxHeaderBytes bounds the response status line and headers.
	maxHeaderBytes = 64 << 10
	// UserAgent is the only identifying header sent.
	UserAgent = "MindRouter-image-fetch/1"
)

// Resolver returns the addresses of host. Tests inject one; the default is
// net.DefaultResolver.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// Config sets the fetcher's limits. The zero value is usable: New fills in
// the defaults.
type Config struct {
	// MaxBytes bounds the image body and a data URL's decoded bytes
	// (default DefaultMaxBytes).
	MaxBytes int64
	// Timeout bounds the whole fetch, redirects and body included
	// (default DefaultTimeout).
	Timeout time.Duration
	// MaxRedirects is how many redirects are followed (default
	// DefaultMaxRedirects); negative means none.
	MaxRedirects int
	// AllowedSchemes is a subset of {"http", "https"} (default both).
	AllowedSchemes []string
	// Resolver looks host names up (default net.DefaultResolver).
	Resolver Resolver
	// AllowPrefixes are addresses the operator allows even though they are
	// in a refused class, e.g. an internal image store. Empty by default.
	// Names refused by name (localhost, metadata) stay refused.
	AllowPrefixes []netip.Prefix
	// RootCAs verifies servers' certificates (default: the system roots).
	RootCAs *x509.CertPool
}

// withDefaults validates c and returns a copy with defaults filled in, so
// later changes to the caller's slices do not reach the fetcher.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("max bytes %d is negative", c.MaxBytes))
	} else if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %v is negative", c.Timeout))
	} else if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.MaxRedirects == 0:
		c.MaxRedirects = DefaultMaxRedirects
	case c.MaxRedirects < 0:
		c.MaxRedirects = 0
	}
	if len(c.AllowedSchemes) == 0 {
		c.AllowedSchemes = []string{"http", "https"}
	} else {
		c.AllowedSchemes = append([]string(nil), c.AllowedSchemes...)
		for _, s := range c.AllowedSchemes {
			if s != "http" && s != "https" {
				errs = append(errs, fmt.Errorf("scheme %q is not http or https", s))
			}
		}
	}
	if c.Resolver == nil {
		c.Resolver = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	prefixes := make([]netip.Prefix, 0, len(c.AllowPrefixes))
	for _, p := range c.AllowPrefixes {
		switch {
		case !p.IsValid():
			errs = append(errs, fmt.Errorf("allow prefix %v is not valid", p))
		case p.Bits() == 0:
			// A /0 would switch the guard off; that must not be one typo away.
			errs = append(errs, fmt.Errorf("allow prefix %v allows every address", p))
		default:
			// Addresses are unmapped before matching, so mapped prefixes must be too.
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			prefixes = append(prefixes, p.Masked())
		}
	}
	c.AllowPrefixes = prefixes
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("fetchguard config: %w", err)
	}
	return c, nil
}
