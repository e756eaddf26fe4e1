package gateway

import (
	"context"
	"database/sql"
	"log/slog"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/telemetry"
)

// sqlDB is a store over database/sql (sqlstore.Store): telemetry keeps
// its history in the same database when ClickHouse is not configured.
type sqlDB interface{ DB() *sql.DB }

// telemetryPart is the telemetry history's store and recorder; nil when
// telemetry is off or has nowhere to go.
type telemetryPart struct {
	st     telemetry.Store
	rec    *telemetry.Recorder
	cancel context.CancelFunc
	done   chan struct{}
}

// openTelemetry picks the history's store: ClickHouse when the audit
// writes there (its tables come with the audit's migrations), else the
// accounts store's database.
func openTelemetry(cfg *config.Config, aud *auditPart, st store.Store, reg *backend.Registry, replica string, log *slog.Logger) *telemetryPart {
	if !cfg.TelemetryOn() {
		return nil
	}
	var ts telemetry.Store
	switch db, ok := st.(sqlDB); {
	case aud != nil && aud.conn != nil:
		ts = telemetry.NewCHStore(aud.conn, aud.database)
	case ok:
		ts = telemetry.NewSQLStore(db.DB())
	default:
		log.Warn("telemetry history off: the accounts store is not an SQL database and ClickHouse is not configured")
		return nil
	}
	return &telemetryPart{st: ts, rec: telemetry.NewRecorder(telemetry.RecorderOptions{Registry: reg, Store: ts, Replica: replica,
		Retention: cfg.Telemetry.Retention.D(), Log: log})}
}

// start runs the recorder until close.
func (t *telemetryPart) start(ctx context.Context) {
	if t == nil {
		return
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t.cancel, t.done = cancel, make(chan struct{})
	go func() { defer close(t.done); t.rec.Run(rctx) }()
}

func (t *telemetryPart) close(context.Context) error {
	if t == nil || t.cancel == nil {
		return nil
	}
	t.cancel()
	<-t.done
	return nil
}

// afterRound chains the telemetry sample after kick (either may be nil).
func (t *telemetryPart) afterRound(kick func()) func() {
	if t == nil {
		return kick
	}
	return func() {
		if kick != nil {
			kick()
		}
		t.rec.Sample()
	}
}

// reader is the store the admin API reads history from (nil: none).
func (t *telemetryPart) reader() telemetry.Store {
	if t == nil {
		return nil
	}
	return t.st
}
