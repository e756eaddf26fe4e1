package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/store"
)

// errNoSession is a token with no live record.
var errNoSession = errors.New("console: no such session")

// SessionStore keeps session records by the SHA-256 of their token, each
// until expires. Implementations are safe for concurrent use and shared
// by every replica.
type SessionStore interface {
	Put(ctx context.Context, idHash []byte, data []byte, expires time.Time) error
	// Get returns errNoSession (wrapped) for a missing or expired record.
	Get(ctx context.Context, idHash []byte) ([]byte, error)
	Delete(ctx context.Context, idHash []byte) error
}

// StoreSessions keeps sessions in the store (migration 0006).
func StoreSessions(s store.Sessions, now func() time.Time) SessionStore {
	return &dbSessions{s: s, now: now}
}

type dbSessions struct {
	s   store.Sessions
	now func() time.Time
}

func (d *dbSessions) Put(ctx context.Context, id, data []byte, exp time.Time) error {
	return d.s.PutSession(ctx, id, data, exp)
}

func (d *dbSessions) Get(ctx context.Context, id []byte) ([]byte, error) {
	b, err := d.s.Session(ctx, id, d.now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNoSession
	}
	return b, err
}

func (d *dbSessions) Delete(ctx context.Context, id []byte) error { return d.s.DeleteSession(ctx, id) }

// RedisSessions keeps sessions in Redis under "mindrouter:console:session:"
// and the hex of the token's hash, expiring with the record.
func RedisSessions(rdb redis.UniversalClient) SessionStore { return &redisSessions{rdb: rdb} }

type redisSessions struct{ rdb redis.UniversalClient }

func redisKey(id []byte) string { return fmt.Sprintf("mindrouter:console:session:%x", id) }

func (r *redisSessions) Put(ctx context.Context, id, data []byte, exp time.Time) error {
	ttl := time.Until(exp)
	if ttl <= 0 {
		return r.Delete(ctx, id)
	}
	if err := r.rdb.Set(ctx, redisKey(id), data, ttl).Err(); err != nil {
		return fmt.Errorf("put console session in redis: %w", err)
	}
	return nil
}

func (r *redisSessions) Get(ctx context.Context, id []byte) ([]byte, error) {
	b, err := r.rdb.Get(ctx, redisKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("read console session from redis: %w", err)
	}
	return b, nil
}

func (r *redisSessions) Delete(ctx context.Context, id []byte) error {
	if err := r.rdb.Del(ctx, redisKey(id)).Err(); err != nil {
		return fmt.Errorf("delete console session in redis: %w", err)
	}
	return nil
}

// Session is a signed-in browser. KeyID is the key it signed in with (0
// for single sign-on); the principal is rebuilt from the store on every
// request.
type Session struct {
	UserID   int64     `json:"user_id"`
	KeyID    int64     `json:"key_id,omitempty"`
	Via      string    `json:"via"` // "key" or "oidc"
	CSRF     string    `json:"csrf"`
	Created  time.Time `json:"created"`
	LastSeen time.Time `json:"last_seen"`

	id []byte // the token's hash
}

// pending is an OpenID Connect sign-in under way, kept under the hash of
// its state until the provider redirects back.
type pending struct {
	Nonce    string    `json:"nonce"`
	Verifier string    `json:"verifier"`
	Created  time.Time `json:"created"`
}

// pendingTTL bounds the time a user may spend at the provider.
const pendingTTL = 10 * time.Minute

// Expiry is the session lifetime policy: Idle without a request, Max
// after sign-in.
type Expiry struct{ Idle, Max time.Duration }

// ends is when s expires if no request comes.
func (e Expiry) ends(s *Session) time.Time {
	idle, abs := s.LastSeen.Add(e.Idle), s.Created.Add(e.Max)
	if idle.Before(abs) {
		return idle
	}
	return abs
}

// live reports whether s is still valid at now.
func (e Expiry) live(s *Session, now time.Time) bool { return now.Before(e.ends(s)) }

// touchEvery is how stale LastSeen may get before a request writes it:
// one write per minute at most, never more than a tenth of the idle time.
func (e Expiry) touchEvery() time.Duration { return min(time.Minute, e.Idle/10) }

// token returns a random URL-safe token and the SHA-256 its record is
// stored under.
func token() (string, []byte, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, fmt.Errorf("session token: %w", err)
	}
	t := base64.RawURLEncoding.EncodeToString(b[:])
	return t, hashToken(t), nil
}

func hashToken(t string) []byte {
	h := sha256.Sum256([]byte(t))
	return h[:]
}

// sessions reads and writes Session records.
type sessions struct {
	st  SessionStore
	exp Expiry
	now func() time.Time
}

// create stores a new session and returns its token.
func (ss *sessions) create(ctx context.Context, s *Session) (string, error) {
	tok, id, err := token()
	if err != nil {
		return "", err
	}
	csrf, _, err := token()
	if err != nil {
		return "", err
	}
	now := ss.now()
	s.CSRF, s.Created, s.LastSeen, s.id = csrf, now, now, id
	return tok, ss.save(ctx, s)
}

func (ss *sessions) save(ctx context.Context, s *Session) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode session: %w", err)
	}
	return ss.st.Put(ctx, s.id, b, ss.exp.ends(s))
}

// get returns the live session of tok (errNoSession: none, expired or
// ended), writing LastSeen when it is stale.
func (ss *sessions) get(ctx context.Context, tok string) (*Session, error) {
	if tok == "" {
		return nil, errNoSession
	}
	id := hashToken(tok)
	b, err := ss.st.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	var s Session
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode session: %w", err)
	}
	s.id = id
	now := ss.now()
	if !ss.exp.live(&s, now) {
		_ = ss.st.Delete(ctx, id)
		return nil, errNoSession
	}
	if now.Sub(s.LastSeen) >= ss.exp.touchEvery() {
		s.LastSeen = now
		if err := ss.save(ctx, &s); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

func (ss *sessions) end(ctx context.Context, s *Session) error { return ss.st.Delete(ctx, s.id) }

// putPending keeps an OpenID Connect sign-in under way by its state.
func (ss *sessions) putPending(ctx context.Context, state string, p *pending) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode sign-in state: %w", err)
	}
	return ss.st.Put(ctx, hashToken("oidc:"+state), b, p.Created.Add(pendingTTL))
}

// takePending returns and deletes the sign-in of state: a state is good
// for one callback only.
func (ss *sessions) takePending(ctx context.Context, state string) (*pending, error) {
	id := hashToken("oidc:" + state)
	b, err := ss.st.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	_ = ss.st.Delete(ctx, id)
	var p pending
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decode sign-in state: %w", err)
	}
	if ss.now().After(p.Created.Add(pendingTTL)) {
		return nil, errNoSession
	}
	return &p, nil
}
