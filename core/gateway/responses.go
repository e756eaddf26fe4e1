package gateway

import (
	"context"
	"log/slog"

	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/responses"
	"github.com/mindrouter/mindrouter/core/server"
	"github.com/mindrouter/mindrouter/core/store"
)

// newKeeper builds the keeper of the Responses and Conversations state
// over the project's store (MySQL when configured, else the embedded
// SQLite file, so state survives a restart and is shared by replicas),
// and runs its retention sweeper until ctx ends. Nil (a stateless
// /v1/responses) when responses.enabled is false.
func newKeeper(ctx context.Context, cfg *config.Config, st store.Store, log *slog.Logger) server.Keeper {
	if !cfg.ResponsesOn() {
		return nil
	}
	rs, ok := st.(store.ResponseStore)
	if !ok {
		log.Warn("the store keeps no Responses state: /v1/responses is stateless")
		return nil
	}
	k := responses.New(rs, responses.OptionsFrom(cfg.Responses),
		log.With("component", "responses"))
	go k.Run(ctx)
	return k
}
