package admin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mindrouter/mindrouter/core/store"
)

// userIn is the body of POST and PATCH /users…; override fields are
// nullable on PATCH (null: back to the group's value).
type userIn struct {
	Username              *string           `json:"username"`
	Email                 *string           `json:"email"`
	FullName              *string           `json:"full_name"`
	GroupID               *int64            `json:"group_id"`
	Group                 *string           `json:"group"` // a group name, instead of group_id
	IsActive              *bool             `json:"is_active"`
	TokenBudgetOverride   nullable[int64]   `json:"token_budget_override"`
	RPMOverride           nullable[int]     `json:"rpm_limit_override"`
	MaxConcurrentOverride nullable[int]     `json:"max_concurrent_override"`
	WeightOverride        nullable[float64] `json:"weight_override"`
	// ModelAccess replaces the group's model allowlist ([]: every
	// model; null: back to the group's).
	ModelAccess nullable[[]string] `json:"model_access"`

	// The reference's fields, accepted and ignored (see the package doc).
	Password    *string `json:"password"`
	Role        *string `json:"role"`
	College     *string `json:"college"`
	Department  *string `json:"department"`
	IntendedUse *string `json:"intended_use"`
}

// apply validates the fields present and writes them to u.
func (h *Handler) applyUser(c *call, in *userIn, u *store.User) error {
	if in.Username != nil {
		if err := checkName("username", *in.Username, 100); err != nil {
			return err
		}
		u.Username = *in.Username
	}
	if in.Email != nil {
		e := *in.Email
		if err := checkText("email", e, 0, 255); err != nil {
			return err
		}
		if e != "" && (!strings.Contains(e, "@") || strings.ContainsAny(e, " \t")) {
			return badRequest("field email: not an email address")
		}
		u.Email = e
	}
	if in.FullName != nil {
		if err := checkText("full_name", *in.FullName, 0, 200); err != nil {
			return err
		}
		u.FullName = *in.FullName
	}
	if in.GroupID != nil && in.Group != nil {
		return badRequest("field group: give group_id or group, not both")
	}
	if in.GroupID != nil || in.Group != nil {
		g, err := h.groupRef(c, in.GroupID, in.Group)
		if err != nil {
			return err
		}
		u.GroupID = g.ID
	}
	if in.IsActive != nil {
		u.Active = *in.IsActive
	}
	return applyOverrides(in, u)
}

func applyOverrides(in *userIn, u *store.User) error {
	return errors.Join(
		override(in.TokenBudgetOverride, &u.TokenBudget, func(v int64) error { return checkRange("token_budget_override", v, 0, maxTokens) }),
		override(in.RPMOverride, &u.RPM, func(v int) error { return checkRange("rpm_limit_override", v, 0, maxRPM) }),
		override(in.MaxConcurrentOverride, &u.MaxConcurrent, func(v int) error { return checkRange("max_concurrent_override", v, 0, maxConcurrent) }),
		override(in.WeightOverride, &u.Weight, func(v float64) error { return checkWeight("weight_override", v) }),
		override(in.ModelAccess, &u.ModelAccess, func(v []string) error { return checkModelAccess("model_access", v) }),
	)
}

// override sets *dst from a nullable field when present (null clears it).
func override[T any](o nullable[T], dst **T, check func(T) error) error {
	if !o.Set {
		return nil
	}
	if !o.Null {
		if err := check(o.V); err != nil {
			return err
		}
	}
	*dst = o.ptr()
	return nil
}

// Bounds of numeric fields: generous, but keep sums far from overflow.
const (
	maxTokens     = int64(1e15)
	maxRPM        = 1_000_000
	maxConcurrent = 100_000
	maxWeight     = 1000.0
)

func checkWeight(field string, w float64) error {
	if !(w > 0 && w <= maxWeight) {
		return badRequest(fmt.Sprintf("field %s: must be greater than 0 and at most %v", field, maxWeight))
	}
	return nil
}

// groupRef resolves a group given by id or name; an unknown one is a bad
// field (400, as the reference answers), not a missing resource.
func (h *Handler) groupRef(c *call, id *int64, name *string) (store.Group, error) {
	var g store.Group
	var err error
	field, what := "group_id", ""
	if id != nil {
		what = itoa(*id)
		g, err = h.st.Group(c.ctx, *id)
	} else {
		field, what = "group", fmt.Sprintf("%q", *name)
		g, err = h.st.GroupByName(c.ctx, *name)
	}
	if errors.Is(err, store.ErrNotFound) {
		return g, badRequest(fmt.Sprintf("field %s: group %s not found", field, what))
	}
	if err != nil {
		return g, fmt.Errorf("read group: %w", err)
	}
	return g, nil
}

func (h *Handler) user(c *call, id int64) (store.User, error) {
	u, err := h.st.User(c.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return u, notFound("User not found")
	}
	if err != nil {
		return u, fmt.Errorf("read user %d: %w", id, err)
	}
	return u, nil
}

func (h *Handler) groupNames(c *call) (map[int64]string, error) {
	gs, err := h.st.Groups(c.ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	m := make(map[int64]string, len(gs))
	for _, g := range gs {
		m[g.ID] = g.Name
	}
	return m, nil
}

func (h *Handler) listUsers(c *call) (any, error) {
	pg, err := c.page()
	if err != nil {
		return nil, err
	}
	gid, err := c.queryID("group_id")
	if err != nil {
		return nil, err
	}
	search, err := c.queryText("search", 200)
	if err != nil {
		return nil, err
	}
	users, total, err := h.st.Users(c.ctx, store.UserFilter{GroupID: gid, Search: search, Offset: pg.skip, Limit: pg.limit})
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	names, err := h.groupNames(c)
	if err != nil {
		return nil, err
	}
	out := make([]userView, 0, len(users))
	for _, u := range users {
		out = append(out, viewUser(u, names[u.GroupID]))
	}
	return map[string]any{"total": total, "skip": pg.skip, "limit": pg.limit, "users": out}, nil
}

func (h *Handler) createUser(c *call) (any, error) {
	var in userIn
	if _, err := decode(c.req.Body, &in); err != nil {
		return nil, err
	}
	if in.Username == nil {
		return nil, badRequest("field username: required")
	}
	if in.GroupID == nil && in.Group == nil {
		return nil, badRequest("field group_id: required (or group, a group name)")
	}
	u := store.User{Active: true}
	if err := h.applyUser(c, &in, &u); err != nil {
		return nil, err
	}
	if err := h.st.CreateUser(c.ctx, &u); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, conflict(fmt.Sprintf("Username '%s' already exists", u.Username))
		}
		return nil, fmt.Errorf("create user: %w", err)
	}
	g, err := h.st.Group(c.ctx, u.GroupID)
	if err != nil {
		return nil, fmt.Errorf("read group: %w", err)
	}
	v := viewUser(u, g.Name)
	h.record(c, "user.create", "user", u.ID, map[string]any{"after": v})
	return v, nil
}

func (h *Handler) getUser(c *call) (any, error) {
	u, err := h.user(c, c.id())
	if err != nil {
		return nil, err
	}
	g, err := h.st.Group(c.ctx, u.GroupID)
	if err != nil {
		return nil, fmt.Errorf("read group: %w", err)
	}
	out := map[string]any{"user": viewUser(u, g.Name)}
	// The profile stays readable while the quota counters are not.
	rep, err := h.usage(c, u, g)
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		out["quota"], out["quota_error"] = nil, ae.Detail
	case err != nil:
		return nil, err
	default:
		out["quota"] = rep
	}
	keys, err := h.st.Keys(c.ctx, u.ID)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	now := h.now()
	kv := make([]keyView, 0, len(keys))
	for _, k := range keys {
		kv = append(kv, viewKey(k, u.Username, now))
	}
	out["api_keys"] = kv
	return out, nil
}

func (h *Handler) updateUser(c *call) (any, error) {
	var in userIn
	fields, err := decode(c.req.Body, &in)
	if err != nil {
		return nil, err
	}
	if len(fields) == 0 {
		return nil, badRequest("No fields to update")
	}
	u, err := h.user(c, c.id())
	if err != nil {
		return nil, err
	}
	if err := h.applyUser(c, &in, &u); err != nil {
		return nil, err
	}
	if err := h.st.UpdateUser(c.ctx, &u); err != nil {
		switch {
		case errors.Is(err, store.ErrConflict):
			return nil, conflict(fmt.Sprintf("Username '%s' already exists", u.Username))
		case errors.Is(err, store.ErrNotFound):
			return nil, notFound("User not found")
		}
		return nil, fmt.Errorf("update user: %w", err)
	}
	// Limits, group, scopes' ceiling or activity may have changed: every
	// replica re-reads this user's keys.
	h.keys.InvalidateUser(c.ctx, u.ID)
	names, err := h.groupNames(c)
	if err != nil {
		return nil, err
	}
	v := viewUser(u, names[u.GroupID])
	h.record(c, "user.update", "user", u.ID, map[string]any{"fields": fields, "after": v})
	return map[string]any{"status": "updated", "user_id": u.ID, "user": v}, nil
}

func (h *Handler) deleteUser(c *call) (any, error) {
	id := c.id()
	if id == c.p.UserID {
		return nil, badRequest("Cannot delete your own account")
	}
	u, err := h.user(c, id)
	if err != nil {
		return nil, err
	}
	if err := h.st.DeleteUser(c.ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, notFound("User not found")
		}
		return nil, fmt.Errorf("delete user: %w", err)
	}
	h.keys.InvalidateUser(c.ctx, id)
	h.record(c, "user.delete", "user", id, map[string]any{"before": map[string]any{"username": u.Username, "email": u.Email, "group_id": u.GroupID}})
	return done("deleted", "user_id", id), nil
}
