package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// DefaultTimeout bounds one sidecar call unless WithTimeout says otherwise.
// It matches the Python gateway's sidecar_timeout.
const DefaultTimeout = 15 * time.Second

// maxBody caps how much of a sidecar answer the client reads. A node with
// many GPUs and processes stays far below it.
const maxBody = 8 << 20

// Client polls one sidecar. It is safe for concurrent use.
type Client struct {
	baseURL string
	key     string
	hc      *http.Client
	timeout time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the http.Client used for requests (default
// http.DefaultClient).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.hc = hc }
}

// WithTimeout bounds each call (default DefaultTimeout). Zero or negative
// leaves only the caller's context in charge.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) { c.timeout = d }
}

// NewClient returns a client for the sidecar at baseURL (for example
// "http://gpu-node-1:8007") that sends key in the X-Sidecar-Key header.
func NewClient(baseURL, key string, opts ...Option) *Client {
	c := &Client{
		baseURL: strings.TrimRight(baseURL, "/"),
		key:     key,
		hc:      http.DefaultClient,
		timeout: DefaultTimeout,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// String describes the client without its key.
func (c *Client) String() string { return "wire.Client(" + c.baseURL + ")" }

// Error is returned for any non-200 answer. Reason is the sidecar's own
// explanation when its body could be decoded.
type Error struct {
	StatusCode int
	Reason     string
}

func (e *Error) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("sidecar answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	return fmt.Sprintf("sidecar answered %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Reason)
}

// IsUnavailable reports whether err says the sidecar is up but cannot read
// its GPUs (HTTP 503, typically because NVML failed to initialise).
func IsUnavailable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusServiceUnavailable
}

// IsUnauthorized reports whether err says the sidecar rejected the key.
func IsUnauthorized(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusUnauthorized
}

// Health calls GET /health.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var h Health
	if err := c.get(ctx, "/health", &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// GPUInfo calls GET /gpu-info.
func (c *Client) GPUInfo(ctx context.Context) (*GPUInfo, error) {
	var info GPUInfo
	if err := c.get(ctx, "/gpu-info", &info); err != nil {
		return nil, err
	}
	return &info, nil
}

func (c *Client) get(ctx context.Context, path string, out any) error {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.baseURL+path, nil)
	if err != nil {
		return fmt.Errorf("build sidecar request %s: %w", path, err)
	}
	req.Header.Set(HeaderKey, c.key)
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("call sidecar %s%s: %w", c.baseURL, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("read sidecar %s answer: %w", path, err)
	}
	if len(body) > maxBody {
		return fmt.Errorf("read sidecar %s answer: body exceeds %d bytes", path, maxBody)
	}
	if resp.StatusCode != http.StatusOK {
		e := &Error{StatusCode: resp.StatusCode}
		var er ErrorResponse
		if json.Unmarshal(body, &er) == nil {
			e.Reason = er.Reason
		}
		return e
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode sidecar %s answer: %w", path, err)
	}
	return nil
}
