// Command fakellm runs the simulated LLM backend (package
// github.com/mindrouter/mindrouter/bench/fakellm) as a standalone server.
//
//	fakellm --engine vllm --addr 127.0.0.1:9001 --models qwen3-8b,llama3.1-8b --ttft 50ms --tps 40
//
// It stops gracefully on SIGINT or SIGTERM: in-flight requests get a few
// seconds to finish, then the rest are aborted.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakellm:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		addr          = flag.String("addr", "127.0.0.1:9001", "listen address")
		engine        = flag.String("engine", fakellm.EngineVLLM, "wire format: vllm or ollama")
		models        = flag.String("models", strings.Join(fakellm.DefaultModels, ","), "comma-separated served model names")
		ttft          = flag.Duration("ttft", 0, "time to first token")
		tps           = flag.Float64("tps", 0, "tokens per second per stream (0 = as fast as possible)")
		maxConcurrent = flag.Int("max-concurrent", 0, "requests generated at once; more queue (0 = unlimited)")
		tokens        = flag.Int("tokens", fakellm.DefaultTokens, "completion length in tokens when the request sets no smaller max_tokens")
		reasoning     = flag.Int("reasoning-tokens", fakellm.DefaultReasoningTokens, "reasoning length in tokens when thinking is on")
		thinking      = flag.Bool("default-thinking", false, "thinking models think unless the request turns it off")
		errorRate     = flag.Float64("error-rate", 0, "fraction of inference requests answered with HTTP 500")
		hangRate      = flag.Float64("hang-rate", 0, "fraction of inference requests that never answer")
		dropRate      = flag.Float64("drop-rate", 0, "fraction of inference requests whose connection closes mid-response")
		toolTurns     = flag.Int("tool-turns", 0, "tool calls a conversation gets before the model answers in text only (0 = no bound)")
		seed          = flag.Int64("seed", 1, "seed of the fault-injection random source")
		maxModelLen   = flag.Int("max-model-len", fakellm.DefaultMaxModelLen, "context length")
		embedDim      = flag.Int("embedding-dim", fakellm.DefaultEmbeddingDim, "embedding vector length")
		logLevel      = flag.String("log-level", "info", "log level: debug, info, warn or error")
	)
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	srv, err := fakellm.New(fakellm.Config{
		Engine:          *engine,
		Models:          strings.Split(*models, ","),
		TTFT:            *ttft,
		TPS:             *tps,
		MaxConcurrent:   *maxConcurrent,
		Tokens:          *tokens,
		ReasoningTokens: *reasoning,
		DefaultThinking: *thinking,
		ErrorRate:       *errorRate,
		HangRate:        *hangRate,
		DropRate:        *dropRate,
		ToolTurns:       *toolTurns,
		Seed:            *seed,
		MaxModelLen:     *maxModelLen,
		EmbeddingDim:    *embedDim,
		Logger:          logger,
	})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe(*addr) }()

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stop()
	logger.Info("fakellm shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("fakellm: forced shutdown", "err", err)
	}
	return <-errc
}
