// Command precompile fills a wazero compilation cache for plugin files:
//
//	precompile -dir CACHE [-modes trusted,strict] FILE.wasm...
//
// The plugin host's tests run it (without the race detector, which slows
// wazero's compiler down tenfold) before the tests load the same files.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/mindrouter/mindrouter/core/pluginhost"
)

func main() {
	dir := flag.String("dir", "", "compilation cache directory")
	modes := flag.String("modes", "trusted,strict", "comma-separated modes")
	flag.Parse()
	if *dir == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var ms []pluginhost.Mode
	for _, m := range strings.Split(*modes, ",") {
		ms = append(ms, pluginhost.Mode(m))
	}
	for _, path := range flag.Args() {
		// A file may carry its own modes: path=trusted+strict.
		fileModes := ms
		if p, m, ok := strings.Cut(path, "="); ok {
			path, fileModes = p, nil
			for _, x := range strings.Split(m, "+") {
				fileModes = append(fileModes, pluginhost.Mode(x))
			}
		}
		wasm, err := os.ReadFile(path)
		if err == nil {
			err = pluginhost.Precompile(context.Background(), *dir, wasm, fileModes...)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, path+":", err)
			os.Exit(1)
		}
	}
}
