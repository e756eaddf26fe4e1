package vllm

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// TestImageURLs: an http(s) image URL is asked of the gateway (each once),
// never handed to vLLM to fetch from inside the cluster; the gateway's
// bytes go out as a data: URL; data: URLs pass as they are.
func TestImageURLs(t *testing.T) {
	const u1, u2 = "https://example.com/cat.png", "http://example.com/dog.jpg"
	req := canon.ChatRequest{Model: "m", Messages: []canon.Message{{Role: canon.RoleUser, Content: []canon.Part{
		{Type: canon.PartText, Text: "compare"}, {Type: canon.PartImage, URL: u1, Detail: "low"},
		{Type: canon.PartImage, URL: "data:image/gif;base64,R0lG"}, {Type: canon.PartImage, URL: u2}, {Type: canon.PartImage, URL: u1}}}}}
	var out sdk.Output
	var ni *sdk.NeedImagesError
	if err := New().EncodeRequest(&sdk.Call{}, &req, &out); !errors.As(err, &ni) || len(ni.URLs) != 2 || ni.URLs[0] != u1 || ni.URLs[1] != u2 {
		t.Fatalf("err = %v", err)
	}
	p := newPlugin()
	payload := req.AppendJSON(nil)
	meta := abi.AppendImage(abi.AppendImage(nil, u1, "image/png", "Q0FU"), u2, "image/jpeg", "RE9H")
	in := make([]byte, abi.HeaderSize, abi.HeaderSize+len(meta)+len(payload))
	abi.PutHeader(in, abi.Header{MetaLen: uint32(len(meta)), PayloadLen: uint32(len(payload))})
	res, err := abi.ParseResult(p.Call(abi.OpRequestEncode, append(append(in, meta...), payload...)))
	if err != nil || res.Status != abi.StatusOK {
		t.Fatalf("%v %s %s", err, res.Status, res.Error)
	}
	var body struct {
		Messages []struct {
			Content []struct {
				ImageURL struct{ URL, Detail string } `json:"image_url"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(res.Payload, &body); err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, c := range body.Messages[0].Content[1:] {
		urls = append(urls, c.ImageURL.URL)
	}
	want := []string{"data:image/png;base64,Q0FU", "data:image/gif;base64,R0lG", "data:image/jpeg;base64,RE9H", "data:image/png;base64,Q0FU"}
	if len(urls) != 4 || urls[0] != want[0] || urls[1] != want[1] || urls[2] != want[2] || urls[3] != want[3] ||
		body.Messages[0].Content[1].ImageURL.Detail != "low" {
		t.Fatalf("urls %q (%s)", urls, res.Payload)
	}
}
