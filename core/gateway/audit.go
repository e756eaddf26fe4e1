package gateway

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mindrouter/mindrouter/core/audit"
	"github.com/mindrouter/mindrouter/core/config"
)

// auditPart is the audit recorder (an observer of every request), its
// reader for the admin API, and the analysts' views in ClickHouse.
type auditPart struct {
	rec       *audit.Recorder
	search    audit.Searcher
	conn      driver.Conn // the reader's ClickHouse connection; nil: embedded
	database  string      // ClickHouse's database
	cancel    context.CancelFunc
	done      chan struct{}
	pruned    chan struct{} // the embedded sink's pruner ended; nil: none
	stopPrune context.CancelFunc
}

// openAudit starts the recorder when audit.enabled. ClickHouse being down
// at start is not an error: events wait in the spool, and the views are
// created on a later start.
func openAudit(ctx context.Context, cfg *config.Config, replica string, log *slog.Logger) (*auditPart, error) {
	if !cfg.AuditOn() {
		return nil, nil
	}
	o, err := recorderOptions(cfg, replica, log)
	if err != nil {
		return nil, err
	}
	ch := o.ClickHouse
	rec, err := audit.New(o)
	if err != nil {
		return nil, fmt.Errorf("start the audit recorder: %w", err)
	}
	a := &auditPart{rec: rec, done: make(chan struct{})}
	if ch != nil {
		conn, err := audit.OpenClickHouse(ch)
		if err != nil {
			_ = rec.Close(ctx)
			return nil, fmt.Errorf("open ClickHouse for the audit reader: %w", err)
		}
		a.conn = conn
		db := orDefault(ch.Database, "mindrouter")
		a.database = db
		vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := audit.MigrateClickHouse(vctx, conn, db); err != nil {
			log.Warn("audit: ClickHouse tables not checked at start (the writer retries); analysts' views not created", "error", err.Error())
		} else if err := audit.ApplyViews(vctx, conn, db); err != nil {
			log.Warn("audit: analysts' views not created", "error", err.Error())
		} else if err := audit.ApplyRetentionClickHouse(vctx, conn, db, retention(cfg)); err != nil {
			log.Warn("audit: retention not applied to ClickHouse", "error", err.Error())
		}
		cancel()
		a.search = audit.NewClickHouseSearcher(conn, db)
	} else {
		a.search = audit.NewSQLiteSearcher(rec.EmbeddedDB())
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.cancel = cancel
	go func() {
		defer close(a.done)
		if err := rec.Run(rctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("audit recorder stopped", "error", err.Error())
		}
	}()
	if r := retention(cfg); ch == nil && r != (audit.Retention{}) {
		pctx, stop := context.WithCancel(rctx)
		a.pruned, a.stopPrune = make(chan struct{}), stop
		go a.prune(pctx, rec.EmbeddedDB(), r, log)
	}
	return a, nil
}

func retention(cfg *config.Config) audit.Retention {
	return audit.Retention{Rows: cfg.Audit.Retention.D(), Content: cfg.Audit.ContentRetention.D()}
}

// pruneEvery is how often the embedded sink is pruned (the first pass a
// minute after start, off the start-up path).
var pruneEvery, pruneFirst = time.Hour, time.Minute

// prune applies the retention to the embedded sink until ctx ends.
func (a *auditPart) prune(ctx context.Context, db *sql.DB, r audit.Retention, log *slog.Logger) {
	defer close(a.pruned)
	t := time.NewTimer(pruneFirst)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := audit.PruneEmbedded(ctx, db, time.Now(), r)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("audit: pruning the embedded sink failed; retried in an hour", "error", err.Error())
		case res != (audit.PruneResult{}):
			log.Info("audit: embedded sink pruned", "rows_deleted", res.Rows, "bodies_emptied", res.Cleared, "blobs_deleted", res.Blobs,
				"retention", r.Rows.String(), "content_retention", r.Content.String())
		}
		t.Reset(pruneEvery)
	}
}

// close writes what is spooled as far as ctx allows (the rest stays in the
// spool for the next start) and stops the recorder.
func (a *auditPart) close(ctx context.Context) error {
	if a == nil {
		return nil
	}
	if a.pruned != nil { // it uses the recorder's database: stopped first
		a.stopPrune()
		<-a.pruned
	}
	err := a.rec.Close(ctx)
	a.cancel()
	<-a.done
	if a.conn != nil {
		err = errors.Join(err, a.conn.Close())
	}
	return err
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// recorderOptions is the recorder's part of cfg.
func recorderOptions(cfg *config.Config, replica string, log *slog.Logger) (audit.Options, error) {
	var ch *audit.CHOptions
	if a := cfg.Audit.ClickHouse; len(a.Addr) > 0 {
		ch = &audit.CHOptions{Addr: a.Addr, Database: a.Database, Username: a.Username, Password: a.Password}
	}
	redact, err := cfg.AuditRedact()
	if err != nil {
		return audit.Options{}, err
	}
	return audit.Options{Dir: cfg.DataPath(cfg.Audit.Spool), ClickHouse: ch, EmbeddedPath: cfg.DataPath(cfg.Audit.Embedded),
		Content: cfg.AuditContent(), Redact: redact, MaxContentBytes: cfg.Audit.MaxContentBytes,
		CommitDelay: cfg.Audit.CommitDelay.D(), SyncEvery: cfg.Audit.SyncEvery.D(), Replica: replica, Log: log}, nil
}
