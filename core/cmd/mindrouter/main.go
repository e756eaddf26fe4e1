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
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/gateway"
	"github.com/mindrouter/mindrouter/core/logredact"
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
	case "plugin":
		err = plugin(os.Args[2:])
	case "admin":
		err = adminCmd(os.Args[2:])
	case "migrate":
		err = migrateCmd(os.Args[2:])
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
  mindrouter plugin check [--golden DIR] [--stream FILE]... FILE.wasm
                                       check a plugin against ABI v2 (conformance kit); a bundle is
                                       checked per component (golden vectors in DIR/<component>/,
                                       streams go to the adapters of their framing) and its fused
                                       ops against the canonical path
  mindrouter migrate [--config FILE]   apply the store's schema migrations
  mindrouter admin [--config FILE] <users|keys|groups|quota|backends> <verb> ...
                                       manage accounts on the store directly (see: mindrouter admin help)`)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	cfgPath := fs.String("config", "", "gateway config file (YAML); empty: embedded defaults")
	_ = fs.Parse(args)

	cfg := config.Default()
	if *cfgPath != "" {
		var err error
		if cfg, err = config.Load(*cfgPath); err != nil {
			return err
		}
	}
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	// Every log line passes the redacting handler: no key reaches the log
	// even if a library quotes raw request bytes.
	log := slog.New(logredact.Handler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if len(cfg.Backends) == 0 {
		addr, closeDemo, err := startDemoBackend(log)
		if err != nil {
			return err
		}
		defer closeDemo()
		cfg.Backends = append(cfg.Backends, config.Backend{Name: "demo-vllm", Engine: "vllm", URL: "http://" + addr, MaxConcurrent: 64})
		log.Info("no backend configured: serving a simulated vLLM backend (bench/fakellm)", "url", "http://"+addr, "models", fakellm.DefaultModels)
	}

	// ADMIN_API_KEY bootstraps an admin; without it, a store with no
	// admin key gets one generated now and shown once.
	g, err := gateway.Start(ctx, gateway.Options{Config: cfg, AdminKey: os.Getenv("ADMIN_API_KEY"), Logger: log, WatchPlugins: 2 * time.Second})
	if err != nil {
		return err
	}
	if k := g.GeneratedAdminKey; k != "" {
		fmt.Fprintf(os.Stderr, "\nThe store had no admin key; generated one (shown once, kept in the store):\n\n    export ADMIN_API_KEY=%s\n\n", k)
	} else if os.Getenv("ADMIN_API_KEY") == "" {
		fmt.Fprintf(os.Stderr, "\nADMIN_API_KEY not set; the store already has admin keys. A new one: mindrouter admin keys create admin --scopes inference,admin,audit\n\n")
	}
	log.Info("mindrouter listening", "addr", g.Addr.String())
	// The generated key was shown once above; the hint names it by variable.
	fmt.Fprintf(os.Stderr, "try:\n  curl -s http://%s/v1/chat/completions -H \"Authorization: Bearer $ADMIN_API_KEY\" -H 'Content-Type: application/json' -d '{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}'\n\n",
		g.Addr, firstModel(cfg))
	select {
	case <-ctx.Done():
	case err := <-g.Done():
		return err
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return g.Close(sctx)
}

func firstModel(cfg *config.Config) string {
	if len(cfg.Backends) > 0 && len(cfg.Backends[0].Models) > 0 {
		return cfg.Backends[0].Models[0]
	}
	return fakellm.DefaultModels[0]
}

func startDemoBackend(log *slog.Logger) (string, func(), error) {
	fs, err := fakellm.New(fakellm.Config{Engine: "vllm", Logger: log.With("component", "demo-backend")})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("demo backend: %w", err)
	}
	go func() { _ = fs.Serve(ln) }()
	return ln.Addr().String(), fs.Close, nil
}

func plugin(args []string) error {
	const use = "usage: mindrouter plugin check [--golden DIR] [--stream FILE]... FILE.wasm"
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
