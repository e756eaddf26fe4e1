package vllm

import (
	"slices"
	"strings"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// inlineImages replaces the http(s) image URLs of msgs with the bytes the
// gateway fetched for them (Call.Image), or asks for them (sdk.NeedImages)
// when the call does not carry them yet. vLLM could fetch the URLs
// itself, but from inside the cluster's network, where a client-chosen
// URL reaches what it must not (internal services, cloud metadata): the
// gateway fetches them instead, through its SSRF guard, and vLLM gets
// data: URLs. data: URLs pass as they are.
func inlineImages(c *sdk.Call, msgs []canon.Message) error {
	var need []string
	for i := range msgs {
		for j := range msgs[i].Content {
			p := &msgs[i].Content[j]
			if p.Type != canon.PartImage || p.URL == "" || strings.HasPrefix(p.URL, "data:") {
				continue
			}
			if mt, b64, ok := c.Image(p.URL); ok {
				p.URL, p.MediaType, p.Data = "", mt, b64
				continue
			}
			if !slices.Contains(need, p.URL) {
				need = append(need, p.URL)
			}
		}
	}
	if len(need) > 0 {
		return sdk.NeedImages(need...)
	}
	return nil
}
