package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/gateway"
	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/version"
)

// adminKeyFileName is the file in data_dir a generated admin key goes to.
const adminKeyFileName = "admin-key"

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "mindrouter %s (commit %s, %s, %s/%s)\n", version.String(), version.CommitID(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func serve(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runServe(ctx, args, os.Stderr)
}

// runServe runs the gateway until ctx ends. Everything it writes to logw
// is a JSON log line (journald and log shippers parse each line); a
// generated admin key goes to a file, never to the log.
func runServe(ctx context.Context, args []string, logw io.Writer) error {
	fset := flag.NewFlagSet("serve", flag.ContinueOnError)
	fset.SetOutput(logw)
	cfgPath := fset.String("config", "", "gateway config file (YAML); empty: embedded defaults")
	if err := fset.Parse(args); err != nil {
		return err
	}

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
	log := slog.New(logredact.Handler(slog.NewJSONHandler(logw, &slog.HandlerOptions{Level: level})))

	if err := checkStoreMoved(cfg); err != nil {
		return err
	}
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
	// admin key gets one generated now, written to data_dir/admin-key.
	keyFile := cfg.DataPath(adminKeyFileName)
	if abs, err := filepath.Abs(keyFile); err == nil {
		keyFile = abs
	}
	g, err := gateway.Start(ctx, gateway.Options{Config: cfg, AdminKey: os.Getenv("ADMIN_API_KEY"), Logger: log,
		WatchPlugins: 2 * time.Second, AdminKeyFile: keyFile, ConfigPath: *cfgPath})
	if err != nil {
		return err
	}
	switch {
	case g.GeneratedAdminKey != "":
		log.Warn("the store had no admin key: generated one, written to a file readable by this user only (never logged); keep it, then delete the file",
			"file", keyFile, "use", "export ADMIN_API_KEY=$(cat "+keyFile+")")
	case os.Getenv("ADMIN_API_KEY") == "":
		log.Info("ADMIN_API_KEY not set; the store already has admin keys",
			"new_key", "mindrouter admin keys create admin --scopes inference,admin,audit")
	}
	scheme := "http"
	if cfg.TLS.On() {
		scheme = "https"
	}
	log.Info("try", "curl", fmt.Sprintf(`curl -s %s://%s/v1/chat/completions --oauth2-bearer "$ADMIN_API_KEY" -H 'Content-Type: application/json' -d '{"model":"%s","messages":[{"role":"user","content":"Hello"}]}'`,
		scheme, g.Addr, firstModel(cfg)))
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

// checkStoreMoved refuses to start on a new, empty SQLite store when the
// store of a gateway from before data_dir (kept beside the config file)
// exists: users and keys would look lost.
func checkStoreMoved(cfg *config.Config) error {
	old := cfg.LegacyStorePath()
	if old == "" {
		return nil
	}
	if _, err := os.Stat(cfg.StoreDSN()); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(old); err != nil {
		return nil
	}
	return fmt.Errorf("store.dsn: relative paths now resolve against data_dir (%s), not the config file's folder: "+
		"%s does not exist but %s does; move it there (with its -wal and -shm files and the audit files beside it), "+
		"or set data_dir or an absolute store.dsn", cfg.DataDir, cfg.StoreDSN(), old)
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
