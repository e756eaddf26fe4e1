package gateway

import (
	"fmt"
	"io"
	"sort"

	"github.com/mindrouter/mindrouter/core/audit"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/sched"
)

// auditMetrics writes the audit recorder's figures for /metrics: a
// growing spool or lag says ClickHouse is down or slow (the issue's
// "metric and log alarm"; the recorder logs the alarm).
func auditMetrics(rec *audit.Recorder) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprintln(w, "# HELP mindrouter_audit_spooled_total Audit events appended to the local spool.")
		fmt.Fprintln(w, "# TYPE mindrouter_audit_spooled_total counter")
		fmt.Fprintf(w, "mindrouter_audit_spooled_total %d\n", rec.Spooled())
		fmt.Fprintln(w, "# HELP mindrouter_audit_written_total Audit events written to the sink (ClickHouse or the embedded file).")
		fmt.Fprintln(w, "# TYPE mindrouter_audit_written_total counter")
		fmt.Fprintf(w, "mindrouter_audit_written_total %d\n", rec.Written())
		fmt.Fprintln(w, "# HELP mindrouter_audit_pending Audit events spooled and not yet in the sink.")
		fmt.Fprintln(w, "# TYPE mindrouter_audit_pending gauge")
		fmt.Fprintf(w, "mindrouter_audit_pending %d\n", rec.Pending())
		fmt.Fprintln(w, "# HELP mindrouter_audit_spool_bytes Bytes of the spool not yet acknowledged by the sink.")
		fmt.Fprintln(w, "# TYPE mindrouter_audit_spool_bytes gauge")
		fmt.Fprintf(w, "mindrouter_audit_spool_bytes %d\n", rec.SpoolBytes())
		fmt.Fprintln(w, "# HELP mindrouter_audit_lag_seconds Age of the oldest spooled event not yet in the sink.")
		fmt.Fprintln(w, "# TYPE mindrouter_audit_lag_seconds gauge")
		fmt.Fprintf(w, "mindrouter_audit_lag_seconds %g\n", rec.Lag().Seconds())
		fmt.Fprintln(w, "# HELP mindrouter_audit_dropped_total Audit events dropped (the spool full at its bound).")
		fmt.Fprintln(w, "# TYPE mindrouter_audit_dropped_total counter")
		fmt.Fprintf(w, "mindrouter_audit_dropped_total %d\n", rec.Dropped())
		fmt.Fprintln(w, "# HELP mindrouter_audit_damaged_total Spool records skipped as damaged (CRC) on replay.")
		fmt.Fprintln(w, "# TYPE mindrouter_audit_damaged_total counter")
		fmt.Fprintf(w, "mindrouter_audit_damaged_total %d\n", rec.Damaged())
	}
}

// fleetMetrics writes the scheduler fleet's figures for /metrics.
func fleetMetrics(f *sched.Fleet) func(io.Writer) {
	return func(w io.Writer) {
		st := f.Stats()
		fmt.Fprintln(w, "# HELP mindrouter_fleet_claims_total Redis round trips claiming backend slots.")
		fmt.Fprintln(w, "# TYPE mindrouter_fleet_claims_total counter")
		fmt.Fprintf(w, "mindrouter_fleet_claims_total %d\n", st.Claims)
		fmt.Fprintln(w, "# TYPE mindrouter_fleet_slots_granted_total counter")
		fmt.Fprintf(w, "mindrouter_fleet_slots_granted_total %d\n", st.Granted)
		fmt.Fprintln(w, "# TYPE mindrouter_fleet_slots_returned_total counter")
		fmt.Fprintf(w, "mindrouter_fleet_slots_returned_total %d\n", st.Returned)
		fmt.Fprintln(w, "# HELP mindrouter_fleet_slots_lost_total Slot leases found expired at renewal.")
		fmt.Fprintln(w, "# TYPE mindrouter_fleet_slots_lost_total counter")
		fmt.Fprintf(w, "mindrouter_fleet_slots_lost_total %d\n", st.Lost)
		fmt.Fprintln(w, "# HELP mindrouter_fleet_redis_down 1 while Redis is unreachable (each replica then uses its share of max_concurrent).")
		fmt.Fprintln(w, "# TYPE mindrouter_fleet_redis_down gauge")
		down := 0
		if st.Down {
			down = 1
		}
		fmt.Fprintf(w, "mindrouter_fleet_redis_down %d\n", down)
	}
}

// queueMetrics writes the fair scheduler's queues for /metrics: requests
// waiting for a slot per model, and how long the oldest has waited. Every
// model a backend serves has a series (0 when none waits), so a queue that
// empties reads 0 rather than vanishing. The least_loaded policy has no
// model queues: its waiters are mindrouter_backend_waiting.
func queueMetrics(adm sched.Admitter, reg *backend.Registry) func(io.Writer) {
	q, _ := adm.(interface{ Queues() []sched.QueueStat })
	return func(w io.Writer) {
		byModel := map[string]sched.QueueStat{}
		for _, m := range reg.Models().Models {
			byModel[m.ID] = sched.QueueStat{Model: m.ID}
		}
		if q != nil {
			for _, st := range q.Queues() {
				byModel[st.Model] = st
			}
		}
		models := make([]string, 0, len(byModel))
		for m := range byModel {
			models = append(models, m)
		}
		sort.Strings(models)
		fmt.Fprintln(w, "# HELP mindrouter_queue_waiting Requests waiting in the fair scheduler for a backend slot, by model.")
		fmt.Fprintln(w, "# TYPE mindrouter_queue_waiting gauge")
		for _, m := range models {
			fmt.Fprintf(w, "mindrouter_queue_waiting{model=%q} %d\n", m, byModel[m].Waiting)
		}
		fmt.Fprintln(w, "# HELP mindrouter_queue_oldest_wait_seconds How long the oldest waiting request of the model has waited.")
		fmt.Fprintln(w, "# TYPE mindrouter_queue_oldest_wait_seconds gauge")
		for _, m := range models {
			fmt.Fprintf(w, "mindrouter_queue_oldest_wait_seconds{model=%q} %g\n", m, byModel[m].OldestWait.Seconds())
		}
	}
}
