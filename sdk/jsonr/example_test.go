package jsonr_test

import (
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk/jsonr"
)

func Example() {
	body := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":5}]}]}`
	var p fastjson.Parser
	v, err := p.Parse(body)
	if err != nil {
		panic(err)
	}
	r := jsonr.New(v)
	fmt.Println(r.String("model"))
	for i, m := range r.Array("messages").All() {
		fmt.Println(i, m.String("role"))
		for _, part := range m.Array("content").All() {
			if part.String("type") == "image_url" {
				part.Object("image_url").String("url")
			}
		}
	}
	if n, ok := r.OptInt("max_tokens", 1, 1<<20); !ok {
		fmt.Println("max_tokens not given", n)
	}
	fmt.Println(r.Err()) // return sdk.BadInput(r.Err().Error()) in a plugin
	// Output:
	// m
	// 0 user
	// max_tokens not given 0
	// messages[0].content[1].image_url: expected object, got number
}
