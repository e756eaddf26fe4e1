package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/fetchguard"
	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// newFetcher builds the SSRF-guarded image fetcher from the config; nil
// when fetching is off (config validation already checked the prefixes).
func newFetcher(c config.Images) (*fetchguard.Fetcher, error) {
	if !c.Fetch {
		return nil, nil
	}
	fc := fetchguard.Config{MaxBytes: c.MaxBytes, Timeout: c.Timeout.D()}
	for _, a := range c.Allow {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			return nil, fmt.Errorf("images.allow: %w", err)
		}
		fc.AllowPrefixes = append(fc.AllowPrefixes, p)
	}
	return fetchguard.New(fc)
}

// needImages returns the URLs an adapter asked for (abi.StatusNeedImages).
func needImages(err error) ([]string, bool) {
	if err == nil {
		return nil, false // before se, which errors.As moves to the heap
	}
	var se *pluginhost.StatusError
	if errors.As(err, &se) && se.Status == abi.StatusNeedImages {
		return abi.NeededImages(se.Msg), true
	}
	return nil, false
}

// imageBudget is what one request's fetched images may hold together:
// images.max_request_bytes, and no more than the adapter's payload limit
// holds of them as base64 in the call's meta (less a margin for the
// rest of the meta), taken from the gateway's images.max_buffered_bytes.
// Fetching stops where it ends, so a request naming more than it allows
// is refused after fetching about that much, not everything it names.
func (ex *exchange) imageBudget() *fetchguard.Budget {
	limit := ex.s.cfg.Images.MaxRequestBytes
	if ex.aver != nil {
		if p := int64(ex.aver.MaxPayload()); p > 0 {
			limit = min(limit, max(p-imageMetaMargin, 0)/4*3)
		}
	}
	return fetchguard.NewBudget(limit, ex.s.images)
}

// imageMetaMargin is the part of a plugin call's meta kept for what is
// not image data (the URLs, media types, the request's other meta).
const imageMetaMargin = 256 << 10

// writeImageMetrics adds the image fetcher's figures to /metrics.
func (s *Server) writeImageMetrics(w io.Writer) {
	var fetched int64
	if s.fetcher != nil {
		fetched = s.fetcher.Fetched()
	}
	fmt.Fprintln(w, "# HELP mindrouter_image_fetch_bytes_total Image bytes the gateway read fetching image URLs.")
	fmt.Fprintln(w, "# TYPE mindrouter_image_fetch_bytes_total counter")
	fmt.Fprintf(w, "mindrouter_image_fetch_bytes_total %d\n", fetched)
	fmt.Fprintln(w, "# HELP mindrouter_image_bytes_held Fetched image bytes requests hold now (images.max_buffered_bytes).")
	fmt.Fprintln(w, "# TYPE mindrouter_image_bytes_held gauge")
	fmt.Fprintf(w, "mindrouter_image_bytes_held %d\n", s.images.Used())
}

// fetchImages fetches urls through the guard, at most max of them, all at
// once, within b, and returns their abi.MetaImage pairs. Any failure is
// the client's 400 naming the image and the reason in the guard's
// client-safe words (never a resolved address); images larger together
// than b are a 413, and a full gateway-wide budget a 503.
func (s *Server) fetchImages(ctx context.Context, urls []string, dst []byte, b *fetchguard.Budget) ([]byte, error) {
	if s.fetcher == nil {
		return dst, apierr.New(canon.ErrInvalidRequest, "image_url_not_supported",
			"the model's backend takes images only inline and this gateway does not fetch image URLs: send the image as base64 (a data: URL)")
	}
	if len(urls) == 0 {
		return dst, pluginFailure(errors.New("need_images without a URL"))
	}
	if max := s.cfg.Images.MaxPerRequest; len(urls) > max {
		return dst, apierr.New(canon.ErrInvalidRequest, "too_many_images",
			fmt.Sprintf("the request gives %d images by URL; the gateway fetches at most %d a request (send the others inline)", len(urls), max))
	}
	imgs := make([]fetchguard.Image, len(urls))
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			imgs[i], errs[i] = s.fetcher.LoadWithin(ctx, u, b)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return dst, errClientGone(ctx.Err())
		}
		msg := "could not be fetched"
		var fe *fetchguard.Error
		if errors.As(err, &fe) {
			msg = fe.Msg
			switch {
			case fe.Reason == fetchguard.ReasonBusy:
				e := apierr.Wrap(canon.ErrOverloaded, "gateway_busy", fe.Msg, err)
				e.RetryAfter = 1
				return dst, e
			case errors.Is(err, fetchguard.ErrOverBudget):
				return dst, apierr.Wrap(canon.ErrRequestTooLarge, "images_too_large", fe.Msg+
					"; send fewer or smaller images", err)
			}
		}
		return dst, apierr.Wrap(canon.ErrInvalidRequest, "image_fetch_failed",
			"image "+logredact.Truncate(urls[i], 200)+": "+msg, err)
	}
	for i, im := range imgs {
		dst = abi.AppendImage(dst, urls[i], im.MediaType, im.Base64())
	}
	return dst, nil
}
