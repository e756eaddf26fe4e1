package gateway

// Regression tests for the routes that once went around the stage chain
// (the account and admin API, /api/me, the Responses state): a hostile
// tenant found them unthrottled, without a body cap of their own, and
// answering "Expect: 100-continue" with 417.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// detail checks that body is the admin API's error shape and returns it.
func detail(t *testing.T, body []byte) string {
	t.Helper()
	var v struct {
		Detail *string `json:"detail"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Detail == nil || *v.Detail == "" {
		t.Fatalf("not {\"detail\": …} (%v): %.300q", err, body)
	}
	return *v.Detail
}

// TestChainRoutes_KeyLoopThrottled: one user key creating and revoking
// keys in a loop on /api/me/api-keys is throttled (limits.admin, by
// default): a 429 {"detail": …} with Retry-After within 500 cycles.
func TestChainRoutes_KeyLoopThrottled(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	_, k := newUser(t, e.base, "looper", "staff", nil, nil)
	throttled := func(what string, r httpResult) bool {
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		if r.status != 429 {
			return false
		}
		if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("%s: 429 with Retry-After %q", what, r.header.Get("Retry-After"))
		}
		t.Logf("%s: 429 %s", what, detail(t, r.body))
		return true
	}
	for i := range 500 {
		r := do(http.DefaultClient, "POST", e.base+"/api/me/api-keys", k.FullKey, strings.NewReader(`{"name":"loop"}`))
		if throttled(fmt.Sprintf("cycle %d: create", i), r) {
			return
		}
		var nk newKey
		if r.status != 200 && r.status != 201 || json.Unmarshal(r.body, &nk) != nil || nk.ID == 0 {
			t.Fatalf("cycle %d: create: %d %s", i, r.status, r.body)
		}
		r = do(http.DefaultClient, "POST", fmt.Sprintf("%s/api/me/api-keys/%d/revoke", e.base, nk.ID), k.FullKey, nil)
		if throttled(fmt.Sprintf("cycle %d: revoke", i), r) {
			return
		}
		if r.status != 200 {
			t.Fatalf("cycle %d: revoke: %d %s", i, r.status, r.body)
		}
	}
	t.Fatal("500 create/revoke cycles with one key and no 429")
}

// TestChainRoutes_TrickledUploadsDoNotStarve: 40 chunked uploads to
// /api/me/api-keys from one key, trickling their bodies, once reserved
// limits.max_body_bytes (16 MiB) each of limits.max_buffered_body_bytes
// (512 MiB) until every other request got 503 gateway_busy. Now each holds
// at most limits.admin.max_body_bytes, and the user's admin concurrency
// bounds how many hold anything: other keys' requests succeed while the
// trickles are in flight.
func TestChainRoutes_TrickledUploadsDoNotStarve(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	_, trickler := newUser(t, e.base, "trickler", "staff", nil, nil)
	_, victim := newUser(t, e.base, "victim", "staff", nil, nil)
	buffered := func() float64 {
		v, ok := metricValue(scrape(t, e.base+"/metrics", ""), "mindrouter_request_body_bytes_buffered")
		if !ok {
			t.Fatal("no mindrouter_request_body_bytes_buffered")
		}
		return v
	}
	head := "POST /api/me/api-keys HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + trickler.FullKey +
		"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n"

	const n = 40
	type trickle struct {
		c      net.Conn
		status chan int // the answer's status (-1: none)
	}
	var ts []trickle
	t.Cleanup(func() {
		for _, tr := range ts {
			tr.c.Close()
		}
	})
	answered, holding := map[int]int{}, 0
	for i := range n {
		c, err := net.Dial("tcp", e.gw.Addr.String())
		if err != nil {
			t.Fatal(err)
		}
		tr := trickle{c, make(chan int, 1)}
		ts = append(ts, tr)
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		before := buffered()
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				tr.status <- -1
				return
			}
			resp.Body.Close()
			tr.status <- resp.StatusCode
		}()
		// Each upload is settled before the next starts: answered, or
		// holding its share of the buffered bytes while its body arrives.
		settled := waitFor(5*time.Second, func() bool {
			select {
			case st := <-tr.status:
				answered[i] = st
				return true
			default:
			}
			if buffered() > before {
				holding++
				return true
			}
			return false
		})
		if !settled {
			t.Fatalf("upload %d: neither answered nor reading after 5 s", i)
		}
	}
	held := buffered()
	t.Logf("%d uploads holding %.0f bytes; answered: %v", holding, held, answered)
	for i, st := range answered {
		if st != 429 {
			t.Errorf("upload %d: answered %d before its body arrived, want 429 (limits.admin.max_concurrent)", i, st)
		}
	}

	// Other keys' requests succeed while the uploads hold what they hold.
	r := do(http.DefaultClient, "POST", e.base+"/v1/chat/completions", victim.FullKey, strings.NewReader(chatJSON(vllmModel, false)))
	if r.err != nil || r.status != 200 {
		t.Fatalf("another key's chat during the uploads: %d %v %s", r.status, r.err, r.body)
	}
	r = do(http.DefaultClient, "GET", e.base+"/api/me", victim.FullKey, nil)
	if r.err != nil || r.status != 200 {
		t.Fatalf("another key's /api/me during the uploads: %d %v %s", r.status, r.err, r.body)
	}
	if now := buffered(); now < held {
		t.Fatalf("the uploads let go (%.0f bytes held, %.0f before): not in flight", now, held)
	}

	// The uploads still in flight end normally: a key each.
	for i, tr := range ts {
		if _, ok := answered[i]; ok {
			continue
		}
		rest := `"name":"t` + strconv.Itoa(i) + `"}`
		if _, err := fmt.Fprintf(tr.c, "%x\r\n%s\r\n0\r\n\r\n", len(rest), rest); err != nil {
			t.Fatalf("upload %d: %v", i, err)
		}
		if st := <-tr.status; st != 200 && st != 201 {
			t.Errorf("upload %d, completed: status %d", i, st)
		}
	}
	if !waitFor(2*time.Second, func() bool { return buffered() == 0 }) {
		t.Errorf("%.0f bytes still held after the uploads ended", buffered())
	}
}

// TestChainRoutes_ExpectContinue: "Expect: 100-continue" on an admin
// route, a /api/me route and a Responses-state route gets 100 Continue
// for a valid key and a body within the route's cap, then the answer;
// otherwise the status the request would get (401, 413), never 417.
func TestChainRoutes_ExpectContinue(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	uid, k := newUser(t, e.base, "expecter", "staff", nil, nil)
	send := func(method, path, key, body string, length int) (interim, final *http.Response, finalBody []byte) {
		t.Helper()
		c, err := net.Dial("tcp", e.gw.Addr.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		h := method + " " + path + " HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " +
			strconv.Itoa(length) + "\r\n"
		if key != "" {
			h += "Authorization: Bearer " + key + "\r\n"
		}
		if _, err := io.WriteString(c, h+"\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		interim, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		if interim.StatusCode != 100 {
			b, _ := io.ReadAll(interim.Body)
			return interim, nil, b
		}
		if _, err := io.WriteString(c, body); err != nil {
			t.Fatal(err)
		}
		final, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s %s after 100: %v", method, path, err)
		}
		finalBody, _ = io.ReadAll(final.Body)
		return interim, final, finalBody
	}
	for _, tc := range []struct {
		name, method, path, key, body, want string
	}{
		{"admin", "POST", fmt.Sprintf("/api/admin/users/%d/api-keys", uid), adminKey, `{"name":"by-admin"}`, `"full_key"`},
		{"self-service", "POST", "/api/me/api-keys", k.FullKey, `{"name":"by-me"}`, `"full_key"`},
		{"responses state", "POST", "/v1/conversations", k.FullKey, `{"metadata":{"topic":"expect"}}`, `"conversation"`},
	} {
		interim, final, b := send(tc.method, tc.path, tc.key, tc.body, len(tc.body))
		if interim.StatusCode != 100 {
			t.Errorf("%s: %s %s: %d %s, want 100 Continue", tc.name, tc.method, tc.path, interim.StatusCode, b)
			continue
		}
		if final.StatusCode/100 != 2 || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: after 100: %d %s", tc.name, final.StatusCode, b)
		}
	}
	// Refusals come before the body, with the status the chain would give.
	for _, tc := range []struct {
		name, path, key string
		length, want    int
	}{
		{"self-service without a key", "/api/me/api-keys", "", 20, 401},
		{"self-service over limits.admin.max_body_bytes", "/api/me/api-keys", k.FullKey, 2 << 20, 413},
		{"responses state with a wrong key", "/v1/conversations", "mr2_wrong_fedcba9876543210", 20, 401},
	} {
		interim, _, b := send("POST", tc.path, tc.key, "", tc.length)
		if interim.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, interim.StatusCode, b, tc.want)
		}
	}
}
