// Package auth decides who is calling. The server extracts the API key from
// the request and asks an Authenticator for the caller's Principal: its
// user, group, scopes, scheduler weight and quota Limits. This package
// holds the types and AdminKey, an Authenticator of one key (the gateway
// uses it to check the configured admin key's shape). The gateway's
// Authenticator is core/accounts' (users, groups, issued and imported
// keys, the bootstrap admin key, revocation across replicas), and the
// Limits a Principal carries are enforced by core/quota.
package auth

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"time"

	"github.com/mindrouter/mindrouter/core/allowlist"
)

// KeyPrefix starts every MindRouter API key.
const KeyPrefix = "mr2_"

// ErrNoKey and ErrBadKey are the two ways authentication fails.
var (
	ErrNoKey  = errors.New("auth: no API key")
	ErrBadKey = errors.New("auth: invalid API key")
)

// Scope is a set of permissions a key grants.
type Scope uint8

// Scopes.
const (
	ScopeInference Scope = 1 << iota // call the model APIs
	ScopeAdmin                       // the admin API
	ScopeAudit                       // read-only admin: audit and usage
)

// Principal is an authenticated caller.
type Principal struct {
	KeyID  string // a non-secret identifier of the key, for logs and audit
	User   string // the key's owner ("admin" for the bootstrap admin key)
	Group  string
	Scopes Scope
	Weight float64 // scheduler weight (0: 1)
	Admin  bool

	// UserID and GroupID are the store's ids (0 for the bootstrap admin
	// key when no store user backs it); KeyNum is the key's store id.
	UserID, GroupID, KeyNum int64
	// Limits are the user's effective limits (overrides, else the group's).
	Limits Limits
	// Models is the models the caller may use (the user's override, else
	// the group's allowlist); nil allows every model. Shared, read-only.
	Models *allowlist.List
}

// Limits are a user's quotas. Zero means unlimited.
type Limits struct {
	TokenBudget   int64         // tokens per budget period
	BudgetPeriod  time.Duration // default 30 days
	PeriodAnchor  time.Time     // a period starts at PeriodAnchor + k·BudgetPeriod
	RPM           int           // requests in any sliding 60 s
	MaxConcurrent int           // requests in flight
}

// Has reports whether p holds every scope in s.
func (p Principal) Has(s Scope) bool { return p.Scopes&s == s }

// Authenticator checks an API key. Implementations must be safe for
// concurrent use and must not retain key.
type Authenticator interface {
	Authenticate(ctx context.Context, key []byte) (Principal, error)
}

// KeyFromHeaders returns the key from "Authorization: Bearer <key>" or, when
// that is absent, from "X-API-Key: <key>" (also what Anthropic clients send).
// The result aliases its inputs.
func KeyFromHeaders(authorization, xAPIKey []byte) []byte {
	if len(authorization) > 7 && bytes.EqualFold(authorization[:7], []byte("bearer ")) {
		return bytes.TrimSpace(authorization[7:])
	}
	return bytes.TrimSpace(xAPIKey)
}

// Secret is a key held in memory; it never prints.
type Secret []byte

// LogValue redacts the secret in slog output.
func (Secret) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// String redacts the secret in fmt output.
func (Secret) String() string { return "[redacted]" }

// AdminKey accepts exactly one key: the admin key.
type AdminKey struct {
	key Secret
	id  string
}

// NewAdminKey returns an Authenticator for one key, which must start with
// KeyPrefix.
func NewAdminKey(key string) (*AdminKey, error) {
	if len(key) < len(KeyPrefix)+16 || key[:len(KeyPrefix)] != KeyPrefix {
		return nil, errors.New("auth: admin key must start with " + KeyPrefix + " and have at least 16 more characters")
	}
	// The id shows four characters after the prefix, without "mr2_", so
	// the log redactor (which removes anything shaped like a key) keeps it.
	return &AdminKey{key: Secret(key), id: "admin:" + key[len(KeyPrefix):len(KeyPrefix)+4] + "…"}, nil
}

// Authenticate implements Authenticator in constant time.
func (a *AdminKey) Authenticate(_ context.Context, key []byte) (Principal, error) {
	if len(key) == 0 {
		return Principal{}, ErrNoKey
	}
	if subtle.ConstantTimeCompare(key, a.key) != 1 {
		return Principal{}, ErrBadKey
	}
	return Principal{KeyID: a.id, User: "admin", Group: "admin", Scopes: ScopeInference | ScopeAdmin | ScopeAudit, Admin: true}, nil
}
