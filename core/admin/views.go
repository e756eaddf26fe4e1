package admin

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
)

// The JSON shapes of the API. Field names follow the reference
// implementation; secrets (key hashes, Argon2 strings, sidecar keys) have
// no field here, so no handler can send one by mistake.

type userView struct {
	ID                    int64     `json:"id"`
	Username              string    `json:"username"`
	Email                 string    `json:"email"`
	FullName              string    `json:"full_name"`
	GroupID               int64     `json:"group_id"`
	GroupName             string    `json:"group_name"`
	IsActive              bool      `json:"is_active"`
	TokenBudgetOverride   *int64    `json:"token_budget_override"`
	RPMOverride           *int      `json:"rpm_limit_override"`
	MaxConcurrentOverride *int      `json:"max_concurrent_override"`
	WeightOverride        *float64  `json:"weight_override"`
	ModelAccess           *[]string `json:"model_access"` // null: the group's
	CreatedAt             time.Time `json:"created_at"`
	UpdatedAt             time.Time `json:"updated_at"`
}

func viewUser(u store.User, groupName string) userView {
	return userView{
		ID: u.ID, Username: u.Username, Email: u.Email, FullName: u.FullName, GroupID: u.GroupID, GroupName: groupName,
		IsActive: u.Active, TokenBudgetOverride: u.TokenBudget, RPMOverride: u.RPM, MaxConcurrentOverride: u.MaxConcurrent,
		WeightOverride: u.Weight, ModelAccess: u.ModelAccess, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt,
	}
}

type groupView struct {
	ID               int64     `json:"id"`
	Name             string    `json:"name"`
	DisplayName      string    `json:"display_name"` // the name: MindRouter keeps one
	Description      string    `json:"description"`
	TokenBudget      int64     `json:"token_budget"`
	BudgetPeriodDays int       `json:"budget_period_days"`
	RPM              int       `json:"rpm_limit"`
	MaxConcurrent    int       `json:"max_concurrent"`
	Weight           float64   `json:"scheduler_weight"`
	IsAdmin          bool      `json:"is_admin"`
	IsAuditor        bool      `json:"is_auditor"`
	KeyExpiryDays    int       `json:"api_key_expiry_days"`
	MaxKeys          int       `json:"max_api_keys"`
	ModelAccess      []string  `json:"model_access"` // []: every model
	UserCount        *int      `json:"user_count,omitempty"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

func viewGroup(g store.Group) groupView {
	return groupView{
		ID: g.ID, Name: g.Name, DisplayName: g.Name, Description: g.Description, TokenBudget: g.TokenBudget,
		BudgetPeriodDays: g.BudgetPeriodDays, RPM: g.RPM, MaxConcurrent: g.MaxConcurrent, Weight: g.Weight,
		IsAdmin: g.IsAdmin, IsAuditor: g.IsAuditor, KeyExpiryDays: g.KeyExpiryDays, MaxKeys: g.MaxKeys,
		ModelAccess: append([]string{}, g.ModelAccess...), CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt,
	}
}

type keyView struct {
	ID         int64      `json:"id"`
	KeyPrefix  string     `json:"key_prefix"`
	Name       string     `json:"name"`
	Status     string     `json:"status"` // active, revoked or expired
	UserID     int64      `json:"user_id"`
	Username   string     `json:"username,omitempty"`
	Scopes     []string   `json:"scopes"`
	Imported   bool       `json:"imported"` // an Argon2id key brought from elsewhere
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	UsageCount int64      `json:"usage_count"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

func viewKey(k store.APIKey, username string, now time.Time) keyView {
	return keyView{
		ID: k.ID, KeyPrefix: k.Prefix, Name: k.Name, Status: keyStatus(k, now), UserID: k.UserID, Username: username,
		Scopes: splitScopes(k.Scopes), Imported: k.Argon2 != "", ExpiresAt: k.ExpiresAt, LastUsedAt: k.LastUsedAt,
		UsageCount: k.UsageCount, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt,
	}
}

// keyStatus is the stored status, or "expired" for an active key past its
// expiry (the store keeps no such status; the authenticator refuses it).
func keyStatus(k store.APIKey, now time.Time) string {
	if k.Status == store.KeyActive && k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) {
		return "expired"
	}
	return k.Status
}

func splitScopes(s string) []string {
	out := []string{}
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// newKeyView is the one response that carries a key.
type newKeyView struct {
	ID        int64      `json:"id"`
	KeyPrefix string     `json:"key_prefix"`
	FullKey   string     `json:"full_key"` // shown once; only its hash is stored
	Name      string     `json:"name"`
	UserID    int64      `json:"user_id"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expires_at"`
	CreatedAt time.Time  `json:"created_at"`
}

type backendView struct {
	ID            int64     `json:"id"`
	Name          string    `json:"name"`
	URL           string    `json:"url"`
	Engine        string    `json:"engine"`
	Status        string    `json:"status"`
	MaxConcurrent int       `json:"max_concurrent"`
	Priority      int       `json:"priority"`
	Models        []string  `json:"models"`
	NodeID        *int64    `json:"node_id"`
	NodeName      *string   `json:"node_name"`
	GPUIndices    []int     `json:"gpu_indices"`
	FromConfig    bool      `json:"from_config"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	// Applied and ApplyError say whether the live registry took the change
	// (present only where this process has one).
	Applied    *bool  `json:"applied,omitempty"`
	ApplyError string `json:"apply_error,omitempty"`
}

func viewBackend(b store.Backend, nodeName *string) backendView {
	v := backendView{
		ID: b.ID, Name: b.Name, URL: b.URL, Engine: b.Engine, Status: b.Status, MaxConcurrent: b.MaxConcurrent,
		Priority: b.Priority, Models: b.Models, NodeID: b.NodeID, NodeName: nodeName, GPUIndices: b.GPUIndices,
		FromConfig: b.FromConfig, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt,
	}
	if v.Models == nil {
		v.Models = []string{}
	}
	return v
}

type nodeView struct {
	ID            int64     `json:"id"`
	Name          string    `json:"name"`
	SidecarURL    string    `json:"sidecar_url"`
	SidecarKeySet bool      `json:"sidecar_key_set"` // the key itself is never shown
	Status        string    `json:"status"`
	FromConfig    bool      `json:"from_config"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

func viewNode(n store.Node) nodeView {
	return nodeView{ID: n.ID, Name: n.Name, SidecarURL: n.SidecarURL, SidecarKeySet: n.SidecarKey != "", Status: n.Status,
		FromConfig: n.FromConfig, CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt}
}

type eventView struct {
	ID         int64           `json:"id"`
	Timestamp  time.Time       `json:"timestamp"`
	UserID     int64           `json:"user_id"`
	ActorKey   string          `json:"actor_key"`
	Action     string          `json:"action"`
	EntityType string          `json:"entity_type"`
	EntityID   string          `json:"entity_id"`
	Detail     json.RawMessage `json:"detail"`
	IPAddress  string          `json:"ip_address"`
}

func viewEvent(e store.AdminEvent) eventView {
	d := json.RawMessage(e.Detail)
	if !json.Valid(d) {
		d, _ = json.Marshal(e.Detail) // a string, as stored
	}
	return eventView{ID: e.ID, Timestamp: e.At, UserID: e.ActorID, ActorKey: e.ActorKey, Action: e.Action,
		EntityType: e.TargetType, EntityID: e.TargetID, Detail: d, IPAddress: e.RemoteAddr}
}

// done is the reference's answer to a change: {"status": …, "<x>_id": …}.
func done(status, idField string, id int64) map[string]any {
	return map[string]any{"status": status, idField: id}
}
