package fetchguard

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// accept lists what backends take; a server that negotiates answers with
// one of these.
const accept = "image/png, image/jpeg, image/gif, image/webp"

// Fetcher fetches images through the guard. It is safe for concurrent use
// and keeps a small pool of idle connections; Close drops them.
type Fetcher struct {
	cfg       Config
	fetched   atomic.Int64 // image body bytes read, all fetches together
	dialer    *net.Dialer
	transport *http.Transport
	client    *http.Client
}

// New validates cfg, fills in defaults and builds a Fetcher.
func New(cfg Config) (*Fetcher, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	f := &Fetcher{cfg: cfg}
	f.dialer = &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second, Control: f.control}
	f.transport = &http.Transport{
		Proxy:                  nil, // never the environment's proxy: it would dial for us, unchecked
		DialContext:            f.dialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: cfg.RootCAs},
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: maxHeaderBytes,
		// Images are compressed already, and a gzip body would make
		// Content-Length say nothing about the decoded size.
		DisableCompression:  true,
		MaxIdleConns:        16,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     30 * time.Second,
	}
	f.client = &http.Client{Transport: f.transport, CheckRedirect: f.checkRedirect} // no Jar: no cookies
	return f, nil
}

// Close drops idle connections.
func (f *Fetcher) Close() { f.transport.CloseIdleConnections() }

// Fetched is the image body bytes the fetcher has read, all fetches
// together (refused ones included: what fetching cost).
func (f *Fetcher) Fetched() int64 { return f.fetched.Load() }

// Load returns the image a client referenced either way: a data: URL is
// decoded (bounded by Config.MaxBytes), anything else is fetched.
func (f *Fetcher) Load(ctx context.Context, ref string) (Image, error) {
	return f.LoadWithin(ctx, ref, nil)
}

// LoadWithin is Load with the image's bytes taken from b (nil: none),
// which refuses the image, before its body is read where its size is
// announced, once the images of b together would exceed it. A refused
// image gives back what it took; a loaded one keeps it until b.Release.
func (f *Fetcher) LoadWithin(ctx context.Context, ref string, b *Budget) (Image, error) {
	if isDataURL(ref) {
		img, err := parseDataURL(ref, f.cfg.MaxBytes)
		if err == nil {
			err = b.take(int64(len(img.Data)))
		}
		if err != nil {
			return Image{}, err
		}
		return img, nil
	}
	return f.fetch(ctx, ref, b)
}

// Fetch GETs an http(s) image URL through the guard. A refusal is an
// *Error; if ctx ends first, Fetch returns ctx's cause instead (the
// client went away or the request's own deadline passed).
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (Image, error) {
	return f.fetch(ctx, rawURL, nil)
}

func (f *Fetcher) fetch(ctx context.Context, rawURL string, b *Budget) (Image, error) {
	if len(rawURL) > maxURLLen {
		return Image{}, newError(ReasonURL, nil, "image URL is longer than %d bytes", maxURLLen)
	}
	fctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(fctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return Image{}, newError(ReasonURL, err, "image URL is not valid")
	}
	if err := f.checkURL(req.URL); err != nil {
		return Image{}, err
	}
	req.Header = http.Header{"User-Agent": {UserAgent}, "Accept": {accept}}
	resp, err := f.client.Do(req)
	if err != nil {
		return Image{}, f.failure(ctx, fctx, err)
	}
	defer resp.Body.Close()
	img, err := f.read(resp, b)
	if err != nil {
		return Image{}, f.failure(ctx, fctx, err)
	}
	return img, nil
}

func (f *Fetcher) read(resp *http.Response, b *Budget) (Image, error) {
	if resp.StatusCode != http.StatusOK {
		return Image{}, newError(ReasonStatus, nil, "image URL returned HTTP %d", resp.StatusCode)
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "image/") {
		return Image{}, errNotImage(err)
	}
	if resp.ContentLength > f.cfg.MaxBytes {
		return Image{}, f.errTooLarge()
	}
	body := &budgetReader{r: io.LimitReader(resp.Body, f.cfg.MaxBytes+1), b: b, counted: &f.fetched}
	size := int64(bytes.MinRead)
	if resp.ContentLength > 0 {
		// Announced: taken before a byte of it is read, so an image the
		// budget cannot hold costs nothing to refuse.
		if err := b.take(resp.ContentLength); err != nil {
			return Image{}, err
		}
		body.prepaid, body.taken = resp.ContentLength, resp.ContentLength
		size = resp.ContentLength + 1 // +1 so ReadFrom sees EOF without growing
	}
	img, err := readImage(body, size, f)
	if err != nil {
		b.give(body.taken)
		return Image{}, err
	}
	if unused := body.taken - int64(len(img.Data)); unused > 0 { // shorter than announced
		b.give(unused)
	}
	return img, nil
}

func readImage(body io.Reader, size int64, f *Fetcher) (Image, error) {
	buf := bytes.NewBuffer(make([]byte, 0, size))
	if _, err := buf.ReadFrom(body); err != nil {
		return Image{}, err
	}
	if int64(buf.Len()) > f.cfg.MaxBytes {
		return Image{}, f.errTooLarge()
	}
	return sniffed(buf.Bytes())
}

// checkRedirect runs before each redirect is followed; the dialer then
// checks the new host's addresses as for the first request.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.cfg.MaxRedirects {
		if f.cfg.MaxRedirects == 0 {
			return newError(ReasonRedirects, nil, "image URL redirects; redirects are not followed")
		}
		return newError(ReasonRedirects, nil, "image URL redirected more than %d times", f.cfg.MaxRedirects)
	}
	if err := f.checkURL(req.URL); err != nil {
		return err
	}
	req.Header.Del("Referer") // the client's URL is not the next host's business
	return nil
}

// failure turns a transport or read error into the error Fetch returns.
func (f *Fetcher) failure(parent, fctx context.Context, err error) error {
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	if parent.Err() != nil {
		return context.Cause(parent)
	}
	var ne net.Error
	if fctx.Err() != nil || errors.As(err, &ne) && ne.Timeout() {
		return newError(ReasonTimeout, err, "image fetch took longer than %v", f.cfg.Timeout)
	}
	return newError(ReasonConnect, err, "image URL could not be fetched")
}

func (f *Fetcher) errTooLarge() *Error {
	return newError(ReasonTooLarge, nil, "image is larger than %d bytes", f.cfg.MaxBytes)
}
