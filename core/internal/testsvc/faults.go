package testsvc

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Faults the fault-matrix suite (core/faultmatrix) injects into the
// servers: a frozen Redis (SIGSTOP, its data kept), and a MariaDB killed
// and started again on its data.

// Freeze stops the server's process (SIGSTOP): connections stay open and
// every call hangs, as in a stalled host, until Thaw. Only for
// StartPrivateRedis's.
func (r *Redis) Freeze() { r.signal(syscall.SIGSTOP) }

// Thaw resumes a server Freeze stopped (SIGCONT).
func (r *Redis) Thaw() { r.signal(syscall.SIGCONT) }

func (r *Redis) signal(sig syscall.Signal) {
	r.t.Helper()
	if r.srv == nil {
		r.t.Fatal("testsvc: signals on the shared Redis; use StartPrivateRedis")
	}
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	if r.srv.cmd == nil {
		r.t.Fatal("testsvc: redis-server is not running")
	}
	if err := r.srv.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("redis-server: %v: %v", sig, err)
	}
}

// KillMariaDB kills the test binary's shared mariadbd (SIGKILL: what it
// had not flushed is lost, as in a crash) and waits until it is gone.
// Every database on it is unreachable until RestartMariaDB. For the
// fault-matrix suite only: every test of the binary shares the server.
func KillMariaDB(t testing.TB) {
	t.Helper()
	maria.mu.Lock()
	defer maria.mu.Unlock()
	srv := maria.srv
	if srv == nil || srv.cmd == nil {
		t.Fatal("testsvc: no mariadbd started")
	}
	_ = srv.cmd.Process.Kill()
	<-srv.exited
}

// RestartMariaDB starts the shared mariadbd KillMariaDB killed, on the same
// address and data directory (InnoDB recovers it), and waits until it
// accepts connections.
func RestartMariaDB(t testing.TB) {
	t.Helper()
	maria.mu.Lock()
	defer maria.mu.Unlock()
	srv := maria.srv
	if srv == nil || srv.cmd == nil {
		t.Fatal("testsvc: no mariadbd started")
	}
	select {
	case <-srv.exited:
	default:
		t.Fatal("testsvc: mariadbd is still running")
	}
	cmd := exec.Command(srv.cmd.Path, srv.cmd.Args[1:]...)
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("restart mariadbd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	srv.cmd, srv.exited = cmd, exited
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := srv.admin.PingContext(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-exited:
			t.Fatalf("mariadbd exited at restart; its log:\n%s", srv.logTail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal(fmt.Errorf("mariadbd on %s did not accept a connection within 60s of its restart (%v); its log:\n%s", srv.addr, err, srv.logTail()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
