package testsvc

import "testing"

func TestRedis_StartRestartStop(t *testing.T) {
	r := StartRedis(t)
	if !pingRedis(r.Addr) {
		t.Fatal("no PONG after start")
	}
	r.Restart()
	if !pingRedis(r.Addr) {
		t.Fatal("no PONG after restart")
	}
	r.Stop()
	if pingRedis(r.Addr) {
		t.Fatal("PONG after stop")
	}
}
