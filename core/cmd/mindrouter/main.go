// Command mindrouter is the MindRouter gateway.
//
//	mindrouter serve [--config FILE]      run the gateway
//	mindrouter plugin check [--golden DIR] [--stream FILE]... FILE.wasm
//	                                       run the plugin conformance kit on a plugin
//
// The binary also carries the first-party plugins compiled natively
// (package plugins/firstparty, registered in natives.go): a plugins.yaml
// entry with path "native:firstparty" (or native:openai, native:vllm,
// native:ollama) serves the same plugin code without WebAssembly, to
// measure the WebAssembly tax. Native plugins have no sandbox: not for
// production.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/mindrouter/mindrouter/core/pluginhost/conformance"
)

func main() {
	registerNatives() // path: "native:NAME" in plugins.yaml
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "version", "--version", "-version":
		printVersion(os.Stdout)
		return
	case "plugin":
		err = plugin(os.Args[2:])
	case "admin":
		err = adminCmd(os.Args[2:])
	case "migrate":
		err = migrateCmd(os.Args[2:])
	case "health":
		err = healthCmd(os.Args[2:])
	case "backup":
		err = backupCmd(os.Args[2:])
	case "restore":
		err = restoreCmd(os.Args[2:])
	case "-h", "--help", "help":
		usage()
		return
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mindrouter:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  mindrouter serve [--config FILE]     run the gateway (no file: embedded defaults)
  mindrouter version | --version       print the version and the commit it was built from
  mindrouter plugin check [--golden DIR] [--stream FILE]... FILE.wasm
                                       check a plugin against ABI v2 (conformance kit); a bundle is
                                       checked per component (golden vectors in DIR/<component>/,
                                       streams go to the adapters of their framing) and its fused
                                       ops against the canonical path
  mindrouter plugin new [--dir DIR] [--module PATH] [--sdk DIR] NAME
                                       scaffold a translator plugin module (go.mod on the SDK, skeleton,
                                       golden-vector test, Makefile: make check builds and checks it)
  mindrouter migrate [--config FILE] [--dry-run]
                                       apply (or list) the store's schema migrations
  mindrouter backup [--config FILE] --to DIR
                                       copy the embedded SQLite store and audit (online, consistent)
  mindrouter restore [--config FILE] --from DIR [--force]
                                       put a backup back (gateway stopped; replaced files kept aside)
  mindrouter health [--config FILE] [--ready]
                                       exit 0 when the gateway on this host answers /healthz (/readyz)
  mindrouter admin [--config FILE] <users|keys|groups|quota|backends> <verb> ...
                                       manage accounts on the store directly (see: mindrouter admin help)`)
}

func plugin(args []string) error {
	const use = "usage: mindrouter plugin check [--golden DIR] [--stream FILE]... FILE.wasm\n       mindrouter plugin new [--dir DIR] [--module PATH] [--sdk DIR] NAME"
	if len(args) >= 1 && args[0] == "new" {
		return pluginNew(args[1:])
	}
	if len(args) < 2 || args[0] != "check" {
		return errors.New(use)
	}
	fs := flag.NewFlagSet("plugin check", flag.ExitOnError)
	golden := fs.String("golden", "", "directory of golden vectors (*.vector.json; see core/pluginhost/conformance); for a bundle, one subdirectory per component")
	var streams streamList
	fs.Var(&streams, "stream", "recorded upstream stream (.sse or .ndjson) for the split check; repeatable")
	_ = fs.Parse(args[1:])
	if fs.NArg() != 1 {
		return errors.New(use)
	}
	rep, err := conformance.Check(context.Background(), fs.Arg(0), conformance.Options{GoldenDir: *golden, Streams: streams})
	fmt.Print(rep.String())
	return err
}

type streamList []string

func (l *streamList) String() string     { return fmt.Sprint([]string(*l)) }
func (l *streamList) Set(v string) error { *l = append(*l, v); return nil }
