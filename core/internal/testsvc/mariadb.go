package testsvc

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MariaDB is a fresh, empty database on the test binary's private
// mariadbd, dropped when the test ends.
type MariaDB struct {
	// DSN is go-sql-driver's: root (no password) over TCP to Addr, the
	// database Name, parseTime=true and loc=UTC.
	DSN  string
	Addr string // 127.0.0.1:port
	Name string // the database, t_<random>
}

// StartMariaDB returns a new database on the one mariadbd that this test
// binary starts on first use (later calls reuse it). The server runs as a
// child process on 127.0.0.1 with its data in a temporary directory;
// StopAll stops it and removes that directory. Packages that use
// StartMariaDB should end with it:
//
//	func TestMain(m *testing.M) { code := m.Run(); testsvc.StopAll(); os.Exit(code) }
//
// Without StopAll the server still dies with the test binary (Linux: a
// parent-death signal), leaving only its temporary directory behind.
//
// The first start initialises a data directory with mariadb-install-db
// (a few seconds) and keeps it in the system temporary directory as a
// template for later test binaries, which copy it instead.
func StartMariaDB(t testing.TB) *MariaDB {
	t.Helper()
	maria.once.Do(func() { maria.srv, maria.err = startMariaDB() })
	if maria.err != nil {
		t.Fatal(maria.err)
	}
	srv := maria.srv
	select {
	case <-srv.exited:
		t.Fatalf("mariadbd on %s has exited; its log:\n%s", srv.addr, srv.logTail())
	default:
	}
	var raw [6]byte
	_, _ = rand.Read(raw[:])
	name := "t_" + hex.EncodeToString(raw[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := srv.admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("create database %s on mariadbd %s: %v", name, srv.addr, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		select {
		case <-srv.exited: // StopAll ran first, or it died: nothing to drop
			return
		default:
		}
		if _, err := srv.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", srv.addr, name
	cfg.ParseTime, cfg.Loc = true, time.UTC
	return &MariaDB{DSN: cfg.FormatDSN(), Addr: srv.addr, Name: name}
}

// StopAll stops the shared servers this test binary started (MariaDB,
// ClickHouse, Redis) and removes their data. Call it from TestMain after
// m.Run.
func StopAll() {
	maria.mu.Lock()
	defer maria.mu.Unlock()
	if maria.srv != nil {
		maria.srv.stop()
	}
	stopClickHouse()
	stopRedis()
}

var maria struct {
	once sync.Once
	mu   sync.Mutex
	srv  *mariadbServer
	err  error
}

type mariadbServer struct {
	dir    string
	addr   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process is gone
	admin  *sql.DB
}

// serverFlags make startup quick and the server light: tests need no
// durability, no name resolution and little memory.
var serverFlags = []string{
	"--skip-name-resolve",
	"--performance-schema=OFF",
	"--innodb-buffer-pool-size=32M",
	"--innodb-log-file-size=8M",
	"--innodb-flush-log-at-trx-commit=0",
	"--innodb-doublewrite=0",
	"--innodb-flush-method=nosync",
	"--character-set-server=utf8mb4",
	"--collation-server=utf8mb4_bin",
	"--max-connections=1000",
}

func startMariaDB() (*mariadbServer, error) {
	mariadbd, err := findBinary("mariadbd", "/usr/sbin/mariadbd")
	if err != nil {
		return nil, err
	}
	installDB, err := findBinary("mariadb-install-db", "/usr/bin/mariadb-install-db")
	if err != nil {
		return nil, err
	}
	userFlag, err := userFlag()
	if err != nil {
		return nil, err
	}
	tmpl, err := dataTemplate(mariadbd, installDB, userFlag)
	if err != nil {
		return nil, err
	}
	sweepStale()
	// A bind race on the free port is possible; try a few ports.
	var lastErr error
	for range 3 {
		srv, err := launchMariaDB(mariadbd, userFlag, tmpl)
		if err == nil {
			return srv, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	return nil, lastErr
}

func findBinary(name, fallback string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if _, err := os.Stat(fallback); err == nil {
		return fallback, nil
	}
	return "", fmt.Errorf("%s not found (PATH or %s): run deploy/scripts/test-services.sh (make test does)", name, fallback)
}

// userFlag is the --user both programs need: root may only run them
// with --user=root; anyone else runs them as themselves.
func userFlag() (string, error) {
	if os.Geteuid() == 0 {
		return "--user=root", nil
	}
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("mariadb: current user: %w", err)
	}
	return "--user=" + u.Username, nil
}

// dataTemplate returns an initialised, cleanly shut down data directory
// for this mariadbd, creating it once per machine (rename makes the
// publication atomic, so concurrent test binaries are safe).
func dataTemplate(mariadbd, installDB, userFlag string) (string, error) {
	st, err := os.Stat(mariadbd)
	if err != nil {
		return "", fmt.Errorf("mariadb: %w", err)
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "v1|%s|%d|%d|%s|%s", mariadbd, st.Size(), st.ModTime().UnixNano(), userFlag, strings.Join(serverFlags, " ")))
	tmpl := filepath.Join(os.TempDir(), "mindrouter-mariadb-template-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(tmpl, ".ready")); err == nil {
		return tmpl, nil
	}
	work, err := os.MkdirTemp(os.TempDir(), "mindrouter-mariadb-init-")
	if err != nil {
		return "", fmt.Errorf("mariadb: %w", err)
	}
	defer os.RemoveAll(work)
	data := filepath.Join(work, "data")
	args := append([]string{"--no-defaults", "--auth-root-authentication-method=normal", "--datadir=" + data,
		userFlag, "--skip-test-db"}, serverFlags...)
	out, err := exec.Command(installDB, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("mariadb-install-db: %w\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(data, ".ready"), nil, 0o600); err != nil {
		return "", fmt.Errorf("mariadb: %w", err)
	}
	if err := os.Rename(data, tmpl); err != nil {
		if _, statErr := os.Stat(filepath.Join(tmpl, ".ready")); statErr == nil {
			return tmpl, nil // another test binary published it first
		}
		return "", fmt.Errorf("mariadb: publish data template: %w", err)
	}
	return tmpl, nil
}

// sweepStale removes the directories of servers whose test binary died
// without StopAll (the server died with it). A directory whose pid file
// names a live process, or that has none yet and is recent, is another
// binary's and is left alone.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "mindrouter-mariadb-[0-9]*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "mysqld.pid"))
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

func launchMariaDB(mariadbd, userFlag, tmpl string) (*mariadbServer, error) {
	dir, err := os.MkdirTemp(os.TempDir(), "mindrouter-mariadb-")
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	data := filepath.Join(dir, "data")
	if err := copyTree(tmpl, data); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("mariadb: copy data template: %w", err)
	}
	port := freePortNoT()
	if port == 0 {
		os.RemoveAll(dir)
		return nil, errors.New("mariadb: no free port on 127.0.0.1")
	}
	srv := &mariadbServer{dir: dir, addr: "127.0.0.1:" + strconv.Itoa(port), exited: make(chan struct{})}
	args := append([]string{"--no-defaults", "--datadir=" + data, "--socket=" + filepath.Join(dir, "mysqld.sock"),
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--skip-networking=0", userFlag,
		"--pid-file=" + filepath.Join(dir, "mysqld.pid"), "--log-error=" + filepath.Join(dir, "error.log")}, serverFlags...)
	cmd := exec.Command(mariadbd, args...)
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	srv.cmd = cmd
	go func() { _ = cmd.Wait(); close(srv.exited) }()

	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", srv.addr
	cfg.Timeout = 2 * time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		srv.stop()
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	srv.admin = sql.OpenDB(conn)
	// Generous: a loaded 2-core CI machine can take a while.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = srv.admin.PingContext(ctx)
		cancel()
		if err == nil {
			return srv, nil
		}
		select {
		case <-srv.exited:
			log := srv.logTail()
			srv.stop()
			return nil, fmt.Errorf("mariadbd exited during startup; its log:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			log := srv.logTail()
			srv.stop()
			return nil, fmt.Errorf("mariadbd on %s did not accept a connection within 60s (%v); its log:\n%s", srv.addr, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop kills the server (its data is thrown away) and removes its
// directory. Safe to call twice.
func (s *mariadbServer) stop() {
	if s.admin != nil {
		s.admin.Close()
	}
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
		s.dir = ""
	}
}

// logTail is the end of the server's error log.
func (s *mariadbServer) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "error.log"))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// freePortNoT is freePort for code without a testing.TB; 0 when none.
func freePortNoT() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
