package testsvc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// ClickHouse is a fresh, empty database on a clickhouse-server child
// process on 127.0.0.1, spoken to over the native TCP protocol (the
// Debian package's 18.16 server has an HTTP interface that clickhouse-go
// does not suit).
type ClickHouse struct {
	Addr     string // native protocol, 127.0.0.1:port
	Database string // t_<random>
	srv      *clickhouseServer
}

// StartClickHouse returns a new database on the one clickhouse-server
// that this test binary starts on first use (later calls reuse it); the
// database is dropped when t ends. Like StartMariaDB, StopAll stops the
// server, and it dies with the test binary otherwise. Tests that stop
// and restart ClickHouse use StartPrivateClickHouse instead.
func StartClickHouse(t testing.TB) *ClickHouse {
	t.Helper()
	ch.once.Do(func() {
		ch.srv, ch.err = newClickHouseServer()
		if ch.err == nil {
			ch.err = ch.srv.start()
		}
	})
	if ch.err != nil {
		t.Fatal(ch.err)
	}
	return ch.srv.newDatabase(t)
}

// StartPrivateClickHouse starts a clickhouse-server of t's own, with a
// fresh database, and stops it when t ends. Its Stop and Start take the
// server down and bring it back on the same address with its data.
func StartPrivateClickHouse(t testing.TB) *ClickHouse {
	t.Helper()
	srv, err := newClickHouseServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.remove)
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	return srv.newDatabase(t)
}

// Stop kills the server (SIGKILL: inserts it acknowledged are already in
// its files). Safe to call twice. Only for StartPrivateClickHouse's.
func (c *ClickHouse) Stop() { c.srv.kill() }

// Start brings a stopped server back on the same address and data, and
// waits until it answers. Only for StartPrivateClickHouse's.
func (c *ClickHouse) Start(t testing.TB) {
	t.Helper()
	if err := c.srv.start(); err != nil {
		t.Fatal(err)
	}
}

// Open connects to the database (for a test's own queries); closed when
// t ends.
func (c *ClickHouse) Open(t testing.TB) driver.Conn {
	t.Helper()
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr: []string{c.Addr}, Auth: clickhouse.Auth{Database: c.Database, Username: "default"},
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatalf("clickhouse: open %s: %v", c.Addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

var ch struct {
	once sync.Once
	srv  *clickhouseServer
	err  error
}

// stopClickHouse is StopAll's part for the shared server.
func stopClickHouse() {
	if ch.srv != nil {
		ch.srv.remove()
	}
}

type clickhouseServer struct {
	dir  string
	addr string
	bin  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd is gone
	admin  driver.Conn
}

// clickhouseConfig is the least the server needs: loopback only, one
// native port, no HTTP or interserver port, small caches, logs to files.
// 18.16's root element is <yandex>; current releases still accept it.
const clickhouseConfig = `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{dir}/server.log</log><errorlog>{dir}/server.err.log</errorlog><size>10M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>{port}</tcp_port>
  <path>{dir}/data/</path>
  <tmp_path>{dir}/tmp/</tmp_path>
  <user_files_path>{dir}/user_files/</user_files_path>
  <format_schema_path>{dir}/format_schemas/</format_schema_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>200</max_concurrent_queries>
  <mlock_executable>false</mlock_executable>
</yandex>
`

const clickhouseUsers = `<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
`

func newClickHouseServer() (*clickhouseServer, error) {
	bin, err := findBinary("clickhouse-server", "/usr/sbin/clickhouse-server")
	if err != nil {
		return nil, err
	}
	sweepStaleClickHouse()
	dir, err := os.MkdirTemp(os.TempDir(), "mindrouter-clickhouse-")
	if err != nil {
		return nil, fmt.Errorf("clickhouse: %w", err)
	}
	port := freePortNoT()
	if port == 0 {
		os.RemoveAll(dir)
		return nil, errors.New("clickhouse: no free port on 127.0.0.1")
	}
	cfg := strings.NewReplacer("{dir}", dir, "{port}", strconv.Itoa(port)).Replace(clickhouseConfig)
	if err := os.WriteFile(filepath.Join(dir, "config.xml"), []byte(cfg), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("clickhouse: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.xml"), []byte(clickhouseUsers), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("clickhouse: %w", err)
	}
	return &clickhouseServer{dir: dir, addr: "127.0.0.1:" + strconv.Itoa(port), bin: bin}, nil
}

// sweepStaleClickHouse removes the directories of servers whose test
// binary died without StopAll, as sweepStale does for MariaDB.
func sweepStaleClickHouse() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "mindrouter-clickhouse-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "server.pid"))
		if err != nil {
			if st, statErr := os.Stat(dir); statErr == nil && time.Since(st.ModTime()) > time.Hour {
				os.RemoveAll(dir)
			}
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && !processAlive(pid) {
			os.RemoveAll(dir)
		}
	}
}

// start launches the server (if it is not running) and waits until it
// answers a ping.
func (s *clickhouseServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	cmd := exec.Command(s.bin, "--config-file="+filepath.Join(s.dir, "config.xml"))
	cmd.Dir = s.dir
	out, err := os.OpenFile(filepath.Join(s.dir, "stdout.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("clickhouse: %w", err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start clickhouse-server: %w", err)
	}
	_ = os.WriteFile(filepath.Join(s.dir, "server.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited

	if s.admin == nil {
		conn, err := clickhouse.Open(&clickhouse.Options{
			Addr: []string{s.addr}, Auth: clickhouse.Auth{Username: "default"},
			DialTimeout: 2 * time.Second, MaxOpenConns: 4,
		})
		if err != nil {
			s.killLocked()
			return fmt.Errorf("clickhouse: open %s: %w", s.addr, err)
		}
		s.admin = conn
	}
	// Generous: a loaded 2-core CI machine can take a while.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = s.admin.Ping(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			log := s.logTail()
			s.killLocked()
			return fmt.Errorf("clickhouse-server exited during startup; its log:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			log := s.logTail()
			s.killLocked()
			return fmt.Errorf("clickhouse-server on %s did not answer within 60s (%v); its log:\n%s", s.addr, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *clickhouseServer) newDatabase(t testing.TB) *ClickHouse {
	t.Helper()
	var raw [6]byte
	_, _ = rand.Read(raw[:])
	name := "t_" + hex.EncodeToString(raw[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s on clickhouse-server %s: %v", name, s.addr, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if !s.running() {
			return // stopped (StopAll ran first, or a test stopped it)
		}
		if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	return &ClickHouse{Addr: s.addr, Database: name, srv: s}
}

func (s *clickhouseServer) exec(ctx context.Context, q string) error {
	s.mu.Lock()
	admin := s.admin
	s.mu.Unlock()
	if admin == nil {
		return errors.New("clickhouse: server not started")
	}
	return admin.Exec(ctx, q)
}

func (s *clickhouseServer) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

func (s *clickhouseServer) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *clickhouseServer) killLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// remove stops the server and deletes its directory. Safe to call twice.
func (s *clickhouseServer) remove() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	if s.admin != nil {
		s.admin.Close()
		s.admin = nil
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
		s.dir = ""
	}
}

// logTail is the end of the server's error log and stdout.
func (s *clickhouseServer) logTail() string {
	var b strings.Builder
	for _, name := range []string{"server.err.log", "stdout.log"} {
		data, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil {
			continue
		}
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s", name, data)
	}
	if b.Len() == 0 {
		return "(no log)"
	}
	return b.String()
}
