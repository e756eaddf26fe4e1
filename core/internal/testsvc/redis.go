package testsvc

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Redis is a database on a redis-server child process on 127.0.0.1: a
// client connects to Addr and selects DB (go-redis: Options.DB; the
// gateway's config: redis.db).
type Redis struct {
	Addr string // host:port
	DB   int    // the database index
	srv  *redisServer
	t    testing.TB
}

// sharedRedisDatabases is how many databases the shared server has; a test
// takes the next one (0 is left unused, so a client that forgets DB does
// not meet another test's keys), wrapping around.
const sharedRedisDatabases = 1024

var sharedRedis struct {
	once sync.Once
	srv  *redisServer
	err  error
	next atomic.Int64
}

// StartRedis returns a fresh, empty database on the one redis-server that
// this test binary starts on first use (later calls reuse it, each getting
// a database index of its own, flushed again when t ends). StopAll stops
// the server; without it, it dies with the test binary (Linux).
//
// Keys are per database, Pub/Sub channels are not: tests that share the
// server see each other's messages on a channel while both run, which is
// why tests on it do not run in parallel with one another. Tests that stop
// or restart Redis use StartPrivateRedis: Stop and Restart fail the test
// here.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	sharedRedis.once.Do(func() {
		srv, err := newRedisServer(sharedRedisDatabases)
		if err == nil {
			err = srv.start()
		}
		sharedRedis.srv, sharedRedis.err = srv, err
	})
	if sharedRedis.err != nil {
		t.Fatal(sharedRedis.err)
	}
	srv := sharedRedis.srv
	db := int(1 + sharedRedis.next.Add(1)%(sharedRedisDatabases-1))
	if err := srv.flush(db); err != nil { // a wrapped-around index may hold an earlier test's keys
		t.Fatalf("redis-server %s: flush database %d: %v", srv.addr, db, err)
	}
	t.Cleanup(func() {
		if err := srv.flush(db); err != nil && srv.running() {
			t.Logf("redis-server %s: flush database %d: %v", srv.addr, db, err)
		}
	})
	return &Redis{Addr: srv.addr, DB: db, t: t}
}

// StartPrivateRedis starts a redis-server of t's own (no persistence,
// database 0) and stops it when t ends; Stop and Restart take it down and
// bring it back on the same address. For the tests of Redis outages.
func StartPrivateRedis(t testing.TB) *Redis {
	t.Helper()
	srv, err := newRedisServer(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	return &Redis{Addr: srv.addr, srv: srv, t: t}
}

// Stop kills the server (SIGKILL: nothing is saved). Safe to call twice.
// Only for StartPrivateRedis's.
func (r *Redis) Stop() {
	if r.srv == nil {
		r.t.Fatal("testsvc: Stop on the shared Redis; use StartPrivateRedis")
	}
	r.srv.stop()
}

// Restart stops the server, losing every key, and starts a new one on the
// same address. Only for StartPrivateRedis's.
func (r *Redis) Restart() {
	r.t.Helper()
	if r.srv == nil {
		r.t.Fatal("testsvc: Restart on the shared Redis; use StartPrivateRedis")
	}
	r.srv.stop()
	if err := r.srv.start(); err != nil {
		r.t.Fatal(err)
	}
}

// stopRedis is StopAll's part for the shared server.
func stopRedis() {
	if sharedRedis.srv != nil {
		sharedRedis.srv.stop()
	}
}

type redisServer struct {
	addr      string
	port      int
	databases int      // 0: the default
	extra     []string // more redis-server arguments (sentinel.go)

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

func newRedisServer(databases int) (*redisServer, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("redis-server not found: run deploy/scripts/test-services.sh (make test does): %v", err)
	}
	port := freePortNoT()
	if port == 0 {
		return nil, fmt.Errorf("redis: no free port on 127.0.0.1")
	}
	return &redisServer{addr: "127.0.0.1:" + strconv.Itoa(port), port: port, databases: databases}, nil
}

// start launches the server (no persistence: it writes no files) and
// waits until it answers PING.
func (s *redisServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", os.TempDir(), "--protected-mode", "no", "--logfile", ""}
	if s.databases > 0 {
		args = append(args, "--databases", strconv.Itoa(s.databases))
	}
	args = append(args, s.extra...)
	cmd := exec.Command("redis-server", args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if pingRedis(s.addr) {
			return nil
		}
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("redis-server on %s exited during startup; its log:\n%s", s.addr, out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	s.killLocked()
	return fmt.Errorf("redis-server on %s did not answer PING within 10s; log:\n%s", s.addr, out.String())
}

func (s *redisServer) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// stop kills the server. Safe to call twice.
func (s *redisServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *redisServer) killLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// flush empties database db (SELECT, FLUSHDB over one connection).
func (s *redisServer) flush(db int) error {
	c, err := net.DialTimeout("tcp", s.addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	d := strconv.Itoa(db)
	if _, err := fmt.Fprintf(c, "*2\r\n$6\r\nSELECT\r\n$%d\r\n%s\r\n*1\r\n$7\r\nFLUSHDB\r\n", len(d), d); err != nil {
		return err
	}
	rd := bufio.NewReader(c)
	for range 2 {
		line, err := rd.ReadString('\n')
		if err != nil {
			return err
		}
		if !strings.HasPrefix(line, "+OK") {
			return fmt.Errorf("redis: %s", strings.TrimSpace(line))
		}
	}
	return nil
}

// syncBuffer is a bytes.Buffer for a child's output, read while it writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<16 {
		return len(p), nil // enough to say why it failed
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func pingRedis(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}
