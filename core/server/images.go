package server

import (
	"context"
	"errors"
	"fmt"
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

// fetchImages fetches urls through the guard, at most max of them, all at
// once, and returns their abi.MetaImage pairs. Any failure is the
// client's 400 naming the image and the reason in the guard's
// client-safe words (never a resolved address).
func (s *Server) fetchImages(ctx context.Context, urls []string, dst []byte) ([]byte, error) {
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
			imgs[i], errs[i] = s.fetcher.Load(ctx, u)
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
		}
		return dst, apierr.Wrap(canon.ErrInvalidRequest, "image_fetch_failed",
			"image "+logredact.Truncate(urls[i], 200)+": "+msg, err)
	}
	for i, im := range imgs {
		dst = abi.AppendImage(dst, urls[i], im.MediaType, im.Base64())
	}
	return dst, nil
}
