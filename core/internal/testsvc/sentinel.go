package testsvc

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SentinelSet is a Redis primary, one replica of it and one Sentinel
// (quorum 1) watching them: enough for a real failover on loopback.
type SentinelSet struct {
	Master    string // the monitored name
	Sentinel  string // the sentinel's host:port
	Primary   *Redis // private servers: Stop one to fail over
	Secondary *Redis
	t         testing.TB
}

// StartSentinel starts the set and waits until the Sentinel knows the
// replica (a failover needs one). Everything stops when t ends.
func StartSentinel(t testing.TB) *SentinelSet {
	t.Helper()
	bin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		t.Fatalf("redis-sentinel not found: run deploy/scripts/test-services.sh (make test does): %v", err)
	}
	primary := StartPrivateRedis(t)
	srv, err := newRedisServer(0)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(primary.Addr)
	srv.extra = []string{"--replicaof", host, port, "--replica-announce-ip", "127.0.0.1"}
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	secondary := &Redis{Addr: srv.addr, srv: srv, t: t}

	sport := freePortNoT()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf") // Sentinel rewrites its config: a file of its own
	const master = "mymaster"
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndir %s\n"+
		"sentinel monitor %s %s %s 1\nsentinel down-after-milliseconds %s 500\n"+
		"sentinel failover-timeout %s 3000\nsentinel parallel-syncs %s 1\n",
		sport, dir, master, host, port, master, master, master)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-sentinel: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	s := &SentinelSet{Master: master, Sentinel: "127.0.0.1:" + strconv.Itoa(sport), Primary: primary, Secondary: secondary, t: t}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if reply, err := s.command("SENTINEL", "REPLICAS", master); err == nil && strings.Contains(reply, srv.addr[strings.LastIndex(srv.addr, ":")+1:]) &&
			!strings.Contains(reply, "s_down") {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-sentinel did not see the replica within 20s; its log:\n%s", out.String())
		}
		select {
		case <-exited:
			t.Fatalf("redis-sentinel exited; its log:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// PrimaryAddr is the address the Sentinel names as primary now.
func (s *SentinelSet) PrimaryAddr() (string, error) {
	reply, err := s.command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.Master)
	if err != nil {
		return "", err
	}
	f := strings.Fields(reply)
	if len(f) != 2 {
		return "", fmt.Errorf("sentinel: %q", reply)
	}
	return net.JoinHostPort(f[0], f[1]), nil
}

// command sends one command to the sentinel and returns its reply's bulk
// strings joined by spaces (a small RESP reader: enough for SENTINEL's
// arrays of arrays of strings).
func (s *SentinelSet) command(args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", s.Sentinel, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	var words []string
	var read func() error
	read = func() error {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		switch line[0] {
		case '*':
			n, _ := strconv.Atoi(line[1:])
			for range n {
				if err := read(); err != nil {
					return err
				}
			}
		case '$':
			n, _ := strconv.Atoi(line[1:])
			if n < 0 {
				return nil
			}
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return err
			}
			words = append(words, string(buf[:n]))
		case '-':
			return fmt.Errorf("sentinel: %s", line[1:])
		default:
			words = append(words, line[1:])
		}
		return nil
	}
	if err := read(); err != nil {
		return "", err
	}
	return strings.Join(words, " "), nil
}
