package admin

import (
	"fmt"
	"strings"

	"github.com/mindrouter/mindrouter/core/accounts"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

// keyImport is the body of a key brought from another system (the
// reference implementation's api_keys rows): its display prefix and its
// Argon2id hash, never the key itself.
type keyImport struct {
	Name      string           `json:"name"`
	KeyPrefix string           `json:"key_prefix"`
	KeyHash   string           `json:"key_hash"` // $argon2id$v=19$m=…,t=…,p=…$salt$hash
	ExpiresAt nullable[string] `json:"expires_at"`
	Scopes    []string         `json:"scopes"`
}

// importUserKey stores an imported key for a user. The key authenticates
// as it did before (the prefix finds it, Argon2id verifies it, once per
// cache period). max_api_keys does not apply: an import carries over keys
// that already exist.
func (h *Handler) importUserKey(c *call) (any, error) {
	u, err := h.user(c, c.id())
	if err != nil {
		return nil, err
	}
	var in keyImport
	if _, err := decode(c.req.Body, &in); err != nil {
		return nil, err
	}
	if err := checkText("name", in.Name, 1, 100); err != nil {
		return nil, err
	}
	if len(in.KeyPrefix) != accounts.PrefixLen || !strings.HasPrefix(in.KeyPrefix, auth.KeyPrefix) ||
		!accounts.WellFormed([]byte(in.KeyPrefix+strings.Repeat("A", accounts.KeyLen-accounts.PrefixLen))) {
		return nil, badRequest(fmt.Sprintf("field key_prefix: the key's first %d characters (%s and 8 url-safe characters)", accounts.PrefixLen, auth.KeyPrefix))
	}
	if len(in.KeyHash) > 512 {
		return nil, badRequest("field key_hash: too long for an Argon2id PHC string")
	}
	if _, err := accounts.VerifyArgon2id(in.KeyHash, []byte("probe")); err != nil {
		return nil, badRequest("field key_hash: not an Argon2id PHC string ($argon2id$v=19$m=…,t=…,p=…$salt$hash)")
	}
	g, err := h.st.Group(c.ctx, u.GroupID)
	if err != nil {
		return nil, fmt.Errorf("read group: %w", err)
	}
	scopes, err := keyScopes(in.Scopes, g, false, c.p)
	if err != nil {
		return nil, err
	}
	exp, err := h.keyExpiry(in.ExpiresAt, g, false, nil)
	if err != nil {
		return nil, err
	}
	k := store.APIKey{UserID: u.ID, Name: in.Name, Prefix: in.KeyPrefix, Argon2: in.KeyHash, Scopes: scopes,
		Status: store.KeyActive, ExpiresAt: exp, CreatedAt: h.now().UTC()}
	if err := h.st.CreateKey(c.ctx, &k); err != nil {
		return nil, fmt.Errorf("import key: %w", err)
	}
	h.keys.InvalidateUser(c.ctx, u.ID) // a cached "unknown key" answer for it goes
	h.record(c, "key.import", "key", k.ID, map[string]any{
		"key_prefix": in.KeyPrefix, "name": k.Name, "target_user_id": u.ID, "scopes": splitScopes(scopes), "expires_at": exp})
	return keyView{ID: k.ID, KeyPrefix: k.Prefix, Name: k.Name, Status: store.KeyActive, UserID: u.ID, Username: u.Username,
		Scopes: splitScopes(scopes), Imported: true, ExpiresAt: exp, CreatedAt: k.CreatedAt}, nil
}
