package gateway

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/store"
)

// healthMetrics are the gauges the alerts (deploy/prometheus/alerts.yml)
// need beyond the request counters: each backend's circuit breaker, and
// whether the store and Redis answer, asked at scrape time (one cheap
// query each, bounded by timeout).
func healthMetrics(reg *backend.Registry, st store.Store, rdb redis.UniversalClient, timeout time.Duration) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprintln(w, "# HELP mindrouter_backend_breaker_open 1 while the backend's circuit breaker is open or half-open (requests route around it).")
		fmt.Fprintln(w, "# TYPE mindrouter_backend_breaker_open gauge")
		for _, b := range reg.Backends() {
			v := 0
			if b.BreakerState() != "closed" {
				v = 1
			}
			fmt.Fprintf(w, "mindrouter_backend_breaker_open{backend=%q} %d\n", b.Name, v)
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(timeout, time.Second))
		defer cancel()
		fmt.Fprintln(w, "# HELP mindrouter_store_up 1 when the store (SQLite or MySQL) answered a query at this scrape.")
		fmt.Fprintln(w, "# TYPE mindrouter_store_up gauge")
		up := 1
		if _, err := st.Version(ctx); err != nil {
			up = 0
		}
		fmt.Fprintf(w, "mindrouter_store_up %d\n", up)
		if rdb == nil {
			return
		}
		fmt.Fprintln(w, "# HELP mindrouter_redis_up 1 when Redis answered a PING at this scrape.")
		fmt.Fprintln(w, "# TYPE mindrouter_redis_up gauge")
		up = 1
		if err := rdb.Ping(ctx).Err(); err != nil {
			up = 0
		}
		fmt.Fprintf(w, "mindrouter_redis_up %d\n", up)
	}
}
