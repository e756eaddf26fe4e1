package testsvc

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Redis is a redis-server child process on 127.0.0.1.
type Redis struct {
	Addr string // host:port
	t    testing.TB
	dir  string
	port int
	mu   sync.Mutex
	cmd  *exec.Cmd
}

// StartRedis starts a private redis-server (no persistence) and stops it
// when t ends.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	_, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found: run deploy/scripts/test-services.sh (make test does): %v", err)
	}
	r := &Redis{t: t, dir: t.TempDir(), port: freePort(t)}
	r.Addr = "127.0.0.1:" + strconv.Itoa(r.port)
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

func (r *Redis) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--protected-mode", "no",
		"--logfile", filepath.Join(r.dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	r.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if pingRedis(r.Addr) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	r.cmd = nil
	return fmt.Errorf("redis-server on %s did not answer PING within 10s; log:\n%s", r.Addr, log)
}

// Stop kills the server (SIGKILL: nothing is saved). Safe to call twice.
func (r *Redis) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// Restart stops the server, losing every key, and starts a new one on the
// same address.
func (r *Redis) Restart() {
	r.t.Helper()
	r.Stop()
	if err := r.start(); err != nil {
		r.t.Fatal(err)
	}
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

// freePort asks the kernel for a free TCP port on loopback.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
