package abi

import "strings"

// Images given by URL (ABI 2.2).
//
// A backend engine that takes images only inline (Ollama) cannot use a
// client's image URL, and a plugin cannot fetch (it has no network). So an
// adapter that meets image URLs on OpRequestEncode or OpFusedRequest
// without their bytes answers StatusNeedImages, with the URLs it needs as
// the error message, one per line. The host fetches them through its
// SSRF guard (no private, loopback, link-local or metadata addresses,
// bounded size and time) and repeats the call once with one MetaImage pair
// per image (AppendImage); an image it may not or cannot fetch is the
// client's 400, and a second StatusNeedImages is a plugin failure. The
// SDK gives adapters sdk.NeedImages and Call.Image for this.
const (
	// StatusNeedImages: the call needs the images whose URLs are in the
	// error message, one per line (2.2; request_encode and fused_request).
	StatusNeedImages Status = 6
	// MetaImage: in, request_encode and fused_request after
	// StatusNeedImages: one fetched image, as AppendImage writes it. The
	// key repeats, once per image.
	MetaImage = "image"
)

// AppendImage appends one MetaImage pair: the URL, the media type and
// the standard base64 of the bytes, separated by newlines (neither a URL
// nor a media type holds one).
func AppendImage(meta []byte, url, mediaType, b64 string) []byte {
	return AppendMeta(meta, MetaImage, url+"\n"+mediaType+"\n"+b64)
}

// ParseImage splits a MetaImage value.
func ParseImage(v string) (url, mediaType, b64 string, ok bool) {
	url, rest, ok1 := strings.Cut(v, "\n")
	mediaType, b64, ok2 := strings.Cut(rest, "\n")
	return url, mediaType, b64, ok1 && ok2
}

// NeededImages splits a StatusNeedImages message into its URLs.
func NeededImages(msg string) []string {
	var urls []string
	for _, u := range strings.Split(msg, "\n") {
		if u != "" {
			urls = append(urls, u)
		}
	}
	return urls
}
