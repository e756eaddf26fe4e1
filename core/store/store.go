// Package store is MindRouter's durable state: groups, users, API keys,
// quota counters, backends, nodes and the admin audit log. Store is the one
// interface; sqlstore implements it over database/sql for MySQL/MariaDB
// (go-sql-driver/mysql) and for an embedded SQLite file (a pure-Go driver,
// the `make run` default). storetest is the suite both pass.
//
// Nothing here is on the request hot path: the gateway caches what it
// reads (verified keys, limits) and writes counters in batches.
package store

import (
	"context"
	"errors"
	"time"
)

// Errors every implementation returns (wrapped) so callers can answer
// 404 and 409.
var (
	ErrNotFound = errors.New("store: not found")
	ErrConflict = errors.New("store: conflict") // a unique name or hash taken, or rows still refer to it
	ErrLimit    = errors.New("store: limit reached")
	// ErrLastAdmin: the change would take is_admin from the last admin
	// group with an active member (UpdateGroupKeepingAdmin).
	ErrLastAdmin = errors.New("store: the last admin group with an active member")
)

// Group holds the defaults of its users. Zero limits mean unlimited.
type Group struct {
	ID          int64
	Name        string // unique
	Description string
	// TokenBudget is the tokens a user may use per budget period.
	TokenBudget      int64
	BudgetPeriodDays int     // default 30
	RPM              int     // requests per minute
	MaxConcurrent    int     // requests in flight per user
	Weight           float64 // scheduler weight (default 1)
	IsAdmin          bool    // members' keys may get the admin scope
	IsAuditor        bool    // members' keys may get the audit (read-only admin) scope
	KeyExpiryDays    int     // new keys expire after this many days (0: never)
	MaxKeys          int     // active keys per user (0: unlimited)
	// ModelAccess is the model allowlist of its members (patterns, see
	// core/allowlist); empty allows every model.
	ModelAccess []string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// User is an account. Override fields, when not nil, replace the group's.
type User struct {
	ID            int64
	Username      string // unique
	Email         string
	FullName      string
	GroupID       int64
	Active        bool
	TokenBudget   *int64
	RPM           *int
	MaxConcurrent *int
	Weight        *float64
	// ModelAccess, when not nil, replaces the group's model allowlist
	// (an empty list: every model).
	ModelAccess *[]string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Key statuses.
const (
	KeyActive  = "active"
	KeyRevoked = "revoked"
)

// APIKey is a stored credential; the key itself is never stored.
type APIKey struct {
	ID     int64
	UserID int64
	Name   string
	// Prefix is the key's first 12 characters ("mr2_" and 8 more): shown
	// to people and, for imported keys, the lookup before Argon2id.
	Prefix string
	// Hash is the SHA-256 of the whole key (unique), for keys MindRouter
	// issued. Nil for an imported key.
	Hash []byte
	// Argon2 is the PHC string ($argon2id$v=19$m=…,t=…,p=…$salt$hash) of an
	// imported key; "" for issued keys.
	Argon2     string
	Scopes     string // comma-separated: inference, admin, audit
	Status     string // KeyActive or KeyRevoked
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
	UsageCount int64
	CreatedAt  time.Time
	RevokedAt  *time.Time
}

// Credential is a key with its user and group, read in one query on an
// authentication cache miss.
type Credential struct {
	Key   APIKey
	User  User
	Group Group
}

// KeyUse is a batch of uses of one key, flushed by the authenticator.
type KeyUse struct {
	KeyID    int64
	LastUsed time.Time
	Count    int64 // added to usage_count
}

// UserFilter selects users; Limit 0 means a default of 100.
type UserFilter struct {
	GroupID int64  // 0: any
	Search  string // substring of username, email or full name
	Offset  int
	Limit   int
}

// Usage is a user's token counters as last persisted. PeriodStart is the
// start of the budget period the TokensUsed belong to.
type Usage struct {
	UserID         int64
	PeriodStart    time.Time
	TokensUsed     int64
	LifetimeTokens int64
	UpdatedAt      time.Time
}

// Backend statuses.
const (
	BackendEnabled  = "enabled"
	BackendDisabled = "disabled"
	BackendDraining = "draining"
)

// Backend is an inference server.
type Backend struct {
	ID            int64
	Name          string // unique
	Engine        string // adapter format: "vllm", "ollama", …
	URL           string
	MaxConcurrent int
	Models        []string // declared models (empty: discovered)
	GPUIndices    []int
	Priority      int
	Status        string
	NodeID        *int64
	// FromConfig marks a backend declared in the YAML config (upserted at
	// every start) as opposed to one registered through the admin API.
	FromConfig bool
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Node is a GPU host with a sidecar.
type Node struct {
	ID         int64
	Name       string // unique
	SidecarURL string
	SidecarKey string
	Status     string // enabled, disabled
	FromConfig bool
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// AdminEvent is one admin action, kept in the admin audit log.
type AdminEvent struct {
	ID         int64
	At         time.Time
	ActorID    int64  // the acting user (0: the bootstrap admin key or the CLI)
	ActorKey   string // the acting key's prefix, or "cli"
	Action     string // e.g. "user.create", "key.revoke"
	TargetType string // "user", "group", "key", "backend", "node", "quota"
	TargetID   string
	Detail     string // JSON of what changed (never a secret)
	RemoteAddr string
}

// Store is MindRouter's durable state. Every method is safe for
// concurrent use. Not-found and conflict errors wrap ErrNotFound and
// ErrConflict.
type Store interface {
	// Migrate applies pending migrations (idempotent); Version is the
	// schema version applied.
	Migrate(ctx context.Context) error
	Version(ctx context.Context) (int, error)
	// SeedGroups creates the usual groups (students, staff, faculty,
	// researchers, admin, auditor) when no group exists yet.
	SeedGroups(ctx context.Context) error
	Close() error

	CreateGroup(ctx context.Context, g *Group) error // sets ID, CreatedAt
	Group(ctx context.Context, id int64) (Group, error)
	GroupByName(ctx context.Context, name string) (Group, error)
	Groups(ctx context.Context) ([]Group, error)
	UpdateGroup(ctx context.Context, g *Group) error
	// UpdateGroupKeepingAdmin is UpdateGroup, except that it refuses with
	// ErrLastAdmin, writing nothing, to take is_admin from an admin group
	// unless another admin group has an active member. The check and the
	// write are one transaction holding the admin groups' rows, so two
	// demotions at once, from any replicas, cannot both pass it.
	UpdateGroupKeepingAdmin(ctx context.Context, g *Group) error
	DeleteGroup(ctx context.Context, id int64) error // ErrConflict while users belong to it

	CreateUser(ctx context.Context, u *User) error
	User(ctx context.Context, id int64) (User, error)
	UserByName(ctx context.Context, username string) (User, error) // ignoring ASCII case, as usernames are unique
	Users(ctx context.Context, f UserFilter) (users []User, total int, err error)
	UpdateUser(ctx context.Context, u *User) error
	DeleteUser(ctx context.Context, id int64) error // deletes the user's keys and usage too

	CreateKey(ctx context.Context, k *APIKey) error
	// CreateKeyCapped is CreateKey unless the user already holds max or
	// more active keys (status active, not expired at now): then it
	// inserts nothing and returns that count with ErrLimit. The count and
	// the insert are one transaction holding the user's row, so replicas
	// creating keys for one user at once cannot pass max together.
	CreateKeyCapped(ctx context.Context, k *APIKey, max int, now time.Time) (active int, err error)
	Key(ctx context.Context, id int64) (APIKey, error)
	Keys(ctx context.Context, userID int64) ([]APIKey, error) // userID 0: every key
	// CredentialByHash finds an issued key by SHA-256; CredentialsByPrefix
	// the imported keys (Argon2 set) with that prefix.
	CredentialByHash(ctx context.Context, hash []byte) (Credential, error)
	CredentialsByPrefix(ctx context.Context, prefix string) ([]Credential, error)
	RevokeKey(ctx context.Context, id int64, at time.Time) error
	DeleteKey(ctx context.Context, id int64) error
	TouchKeys(ctx context.Context, uses []KeyUse) error

	Usage(ctx context.Context, userID int64) (Usage, error) // zero Usage (no error) when none stored
	// SaveUsage upserts each row (the newest figures win; LifetimeTokens
	// never decreases).
	SaveUsage(ctx context.Context, rows []Usage) error

	UpsertBackend(ctx context.Context, b *Backend) error // by Name; sets ID
	Backend(ctx context.Context, id int64) (Backend, error)
	Backends(ctx context.Context) ([]Backend, error)
	UpdateBackend(ctx context.Context, b *Backend) error
	DeleteBackend(ctx context.Context, id int64) error

	UpsertNode(ctx context.Context, n *Node) error // by Name; sets ID
	Node(ctx context.Context, id int64) (Node, error)
	Nodes(ctx context.Context) ([]Node, error)
	UpdateNode(ctx context.Context, n *Node) error
	DeleteNode(ctx context.Context, id int64) error // ErrConflict while backends refer to it

	RecordAdmin(ctx context.Context, e *AdminEvent) error
	AdminEvents(ctx context.Context, offset, limit int) ([]AdminEvent, error) // newest first
}

// Sessions keeps the web console's sessions (core/console) when no Redis
// does: opaque records by the SHA-256 of their token, each with the time
// it may be deleted. sqlstore implements it (migration 0006); it is apart
// from Store so that stores without it still serve the API.
type Sessions interface {
	// PutSession inserts or replaces the record of idHash.
	PutSession(ctx context.Context, idHash, data []byte, expires time.Time) error
	// Session returns the record of idHash, ErrNotFound when there is none
	// or it expired before now.
	Session(ctx context.Context, idHash []byte, now time.Time) ([]byte, error)
	DeleteSession(ctx context.Context, idHash []byte) error
	// PruneSessions deletes the records that expired before now.
	PruneSessions(ctx context.Context, now time.Time) (int64, error)
}
