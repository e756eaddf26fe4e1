// Command mkimage builds the gateway's container image as a tarball
// without a container engine (make image):
//
//	mkimage -bin bin/mindrouter -o bin/mindrouter-image.tar -tag mindrouter:VERSION
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/mindrouter/mindrouter/deploy/image"
)

func main() {
	bin := flag.String("bin", "bin/mindrouter", "static linux/amd64 gateway binary")
	cfg := flag.String("config", "deploy/container/mindrouter.yaml", "container config")
	plugins := flag.String("plugins", "plugins.yaml", "plugins.yaml; the files it loads go in too")
	out := flag.String("o", "bin/mindrouter-image.tar", "output tarball")
	tag := flag.String("tag", "mindrouter:dev", "image reference")
	version := flag.String("version", "dev", "version label")
	ca := flag.String("ca", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to include (empty: none)")
	flag.Parse()
	if _, err := os.Stat(*ca); *ca != "" && err != nil {
		*ca = ""
	}
	img, err := image.Build(context.Background(), image.Options{Binary: *bin, Config: *cfg, PluginsYAML: *plugins,
		CACerts: *ca, Version: *version, Created: time.Now().UTC().Truncate(time.Second)})
	if err == nil {
		err = image.Write(*out, *tag, img)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
	d, _ := img.Digest()
	fmt.Printf("%s: %s %s\n", *out, *tag, d)
}
