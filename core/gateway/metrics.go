package gateway

import (
	"fmt"
	"io"

	"github.com/mindrouter/mindrouter/core/audit"
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
