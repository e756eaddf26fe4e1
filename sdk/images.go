package sdk

import (
	"strings"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// NeedImagesError is what NeedImages returns; the dispatcher answers it
// with abi.StatusNeedImages.
type NeedImagesError struct{ URLs []string }

func (e *NeedImagesError) Error() string { return strings.Join(e.URLs, "\n") }

// NeedImages is returned by an adapter's EncodeRequest when the request
// gives images by URL, its engine takes them only inline, and the call
// does not carry them yet (Call.Image): the host fetches the URLs through
// its SSRF guard and calls again with the images (ABI 2.2, see the
// package doc of abi, "Images given by URL"). Name every URL the request
// needs in one NeedImages, each once; a URL with a newline cannot be
// fetched and is the client's error (return BadInput instead).
func NeedImages(urls ...string) error { return &NeedImagesError{URLs: urls} }

// Image returns the image the host fetched for url on this call: its
// media type and standard base64 bytes. ok is false before the host has
// fetched it (answer NeedImages) or when the call is not a request encode.
func (c *Call) Image(url string) (mediaType, b64 string, ok bool) {
	m := c.meta
	for len(m) > 0 {
		k, v, rest, err := abi.NextMeta(m)
		if err != nil {
			return "", "", false
		}
		if string(k) == abi.MetaImage {
			if u, mt, data, ok := abi.ParseImage(string(v)); ok && u == url {
				return mt, data, true
			}
		}
		m = rest
	}
	return "", "", false
}
