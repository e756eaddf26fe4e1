// Package faultmatrix is the fault-matrix suite: two gateway replicas
// (the real binary, as child processes) on one MariaDB, one Redis and one
// ClickHouse (real servers from core/internal/testsvc), in front of three
// simulated vLLM backends (bench/fakellm), under a small mixed load
// (streamed and not, through both replicas) while one fault at a time is
// injected and restored: a backend killed, hung or answering 500; Redis
// killed and restarted empty, paused (CLIENT PAUSE) or frozen (SIGSTOP);
// MariaDB killed; ClickHouse down; a replica SIGKILLed.
//
// For each fault it asserts that every answered request is in the audit
// exactly once, that the quota charged is within 1 % of the tokens the
// clients were delivered, and that client errors and the recovery time
// stay within the fault's stated bound (faults in matrix_test.go). The
// figures of a run are a table in docs/faults.md.
//
// The tests are behind the build tag faults, so `make test` does not run
// them: `make test-faults` does (CI runs it after `make test`), and
// `make test-faults UPDATE=1` rewrites docs/faults.md from the run.
package faultmatrix
