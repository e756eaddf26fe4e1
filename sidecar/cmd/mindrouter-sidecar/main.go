// Command mindrouter-sidecar serves GPU telemetry of the node it runs on to
// the MindRouter gateway: GET /health, GET /gpu-info and GET /metrics, all
// requiring the X-Sidecar-Key header.
//
// It needs cgo to build (go-nvml) but no GPU: libnvidia-ml.so.1 is opened at
// run time. Without it the process keeps running, answers /health with 503
// and the reason, and retries NVML initialisation periodically.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/mindrouter/mindrouter/sidecar/collect/collecttest"

	"github.com/mindrouter/mindrouter/sidecar/collect"
	"github.com/mindrouter/mindrouter/sidecar/server"
	"github.com/mindrouter/mindrouter/sidecar/wire"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stderr, env{}))
}

// env holds what tests replace: the NVML library and a hook that learns the
// listening address.
type env struct {
	newLib  func(path string) nvml.Interface
	onReady func(addr net.Addr)
}

type config struct {
	addr         string
	key          server.Secret
	cacheTTL     time.Duration
	initRetry    time.Duration
	nvmlLib      string
	mockGPUs     int
	logLevel     slog.Level
	shutdownWait time.Duration
}

// parseConfig reads flags and environment. Flags win over the environment;
// the key comes from --key-file if given, else SIDECAR_SECRET_KEY.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("mindrouter-sidecar", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: mindrouter-sidecar [flags]\n\n"+
			"Serves GPU telemetry (NVML) over HTTP for the MindRouter gateway.\n"+
			"The shared key comes from --key-file or SIDECAR_SECRET_KEY; the sidecar refuses to start without one.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	addr := fs.String("addr", envOr(getenv, "SIDECAR_ADDR", wire.DefaultAddr), "listen address (env SIDECAR_ADDR)")
	keyFile := fs.String("key-file", getenv("SIDECAR_KEY_FILE"), "file holding the shared key (env SIDECAR_KEY_FILE); overrides SIDECAR_SECRET_KEY")
	cacheTTL := fs.Duration("cache", server.DefaultCacheTTL, "reuse one GPU reading for this long across concurrent requests")
	initRetry := fs.Duration("init-retry", 30*time.Second, "retry NVML initialisation this often while it fails")
	nvmlLib := fs.String("nvml-lib", "", "path of libnvidia-ml.so.1 (default: dynamic loader search)")
	mockGPUs := fs.Int("mock-gpus", 0, "serve N simulated H200 GPUs (go-nvml's mock, idle readings) instead of NVML: demos and clusters without GPUs (env SIDECAR_MOCK_GPUS)")
	logLevel := fs.String("log-level", envOr(getenv, "SIDECAR_LOG_LEVEL", "info"), "debug, info, warn or error (env SIDECAR_LOG_LEVEL)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *showVersion {
		fmt.Fprintln(stderr, "mindrouter-sidecar", version)
		return nil, flag.ErrHelp
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if v := getenv("SIDECAR_MOCK_GPUS"); v != "" && *mockGPUs == 0 {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("parse SIDECAR_MOCK_GPUS: %w", err)
		}
		*mockGPUs = n
	}
	if *mockGPUs < 0 || *mockGPUs > 64 {
		return nil, fmt.Errorf("--mock-gpus must be 0..64, got %d", *mockGPUs)
	}

	c := &config{addr: *addr, cacheTTL: *cacheTTL, initRetry: *initRetry, nvmlLib: *nvmlLib, mockGPUs: *mockGPUs, shutdownWait: 10 * time.Second}
	if err := c.logLevel.UnmarshalText([]byte(*logLevel)); err != nil {
		return nil, fmt.Errorf("parse --log-level: %w", err)
	}
	if c.initRetry <= 0 {
		return nil, fmt.Errorf("--init-retry must be positive, got %s", c.initRetry)
	}

	raw, source := getenv("SIDECAR_SECRET_KEY"), "SIDECAR_SECRET_KEY"
	if *keyFile != "" {
		b, err := os.ReadFile(*keyFile)
		if err != nil {
			return nil, fmt.Errorf("read key file: %w", err)
		}
		raw, source = string(b), "--key-file "+*keyFile
	}
	key, err := server.NewSecret(raw)
	if err != nil {
		if *keyFile == "" {
			return nil, errors.New("no shared key: set SIDECAR_SECRET_KEY or pass --key-file; refusing to start without one")
		}
		return nil, fmt.Errorf("load shared key from %s: %w", source, err)
	}
	c.key = key
	return c, nil
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

// run starts the sidecar and blocks until ctx is done. It returns the exit
// status.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, e env) int {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "mindrouter-sidecar:", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	if err := serve(ctx, cfg, log, e); err != nil {
		log.Error("sidecar stopped", "err", err.Error())
		return 1
	}
	return 0
}

func serve(ctx context.Context, cfg *config, log *slog.Logger, e env) error {
	if e.newLib == nil && cfg.mockGPUs > 0 {
		log.Warn("serving simulated GPUs (--mock-gpus), not NVML", "gpus", cfg.mockGPUs)
		e.newLib = func(string) nvml.Interface { return collecttest.NewH200(cfg.mockGPUs) }
	}
	if e.newLib == nil {
		e.newLib = func(path string) nvml.Interface {
			if path == "" {
				return nvml.New()
			}
			return nvml.New(nvml.WithLibraryPath(path))
		}
	}
	col := collect.New(e.newLib(cfg.nvmlLib), collect.Options{Version: version, Logger: log})
	if err := col.Init(ctx); err != nil {
		log.Warn("nvml not available; serving 503 and retrying", "err", err.Error(), "retry_every", cfg.initRetry.String())
	} else {
		log.Info("nvml initialized")
	}
	defer func() {
		if err := col.Shutdown(); err != nil {
			log.Warn("nvml shutdown", "err", err.Error())
		}
	}()

	h, err := server.New(server.Config{
		Source: col, Key: cfg.key, Version: version, CacheTTL: cfg.cacheTTL, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("build handler: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	retryCtx, stopRetry := context.WithCancel(ctx)
	defer stopRetry()
	go col.RetryInit(retryCtx, cfg.initRetry)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("sidecar listening", "addr", ln.Addr().String(), "version", version,
		"cache", cfg.cacheTTL.String(), "key", cfg.key)
	if e.onReady != nil {
		e.onReady(ln.Addr())
	}

	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.shutdownWait)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down http server: %w", err)
	}
	return nil
}
