package fetchguard_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mindrouter/mindrouter/core/fetchguard"
)

// The gateway hands either form of image reference to Load and maps a
// refusal's Reason to a client error; Error() is safe to show.
func ExampleFetcher_Load() {
	f, err := fetchguard.New(fetchguard.Config{})
	if err != nil {
		panic(err)
	}
	defer f.Close()
	for _, ref := range []string{
		"data:image/gif;base64,R0lGODlhAQABAAAAACw=",
		"http://169.254.169.254/latest/meta-data/",
		"http://0x7f.1/admin",
		"ftp://example.com/cat.png",
	} {
		img, err := f.Load(context.Background(), ref)
		var fe *fetchguard.Error
		if errors.As(err, &fe) {
			fmt.Printf("%s: %s\n", fe.Reason, fe)
			continue
		}
		fmt.Println(img.MediaType, len(img.Data))
	}
	// Output:
	// image/gif 14
	// forbidden_address: image URL host is not allowed
	// url: image URL host must be a name or an IP address in standard notation
	// scheme: image URL scheme must be http or https
}
