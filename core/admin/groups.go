package admin

import (
	"errors"
	"fmt"

	"github.com/mindrouter/mindrouter/core/store"
)

// groupIn is the body of POST and PATCH /groups….
type groupIn struct {
	Name             *string            `json:"name"`
	DisplayName      *string            `json:"display_name"` // the reference's; accepted and ignored
	Description      *string            `json:"description"`
	TokenBudget      *int64             `json:"token_budget"`
	BudgetPeriodDays *int               `json:"budget_period_days"`
	RPM              *int               `json:"rpm_limit"`
	MaxConcurrent    *int               `json:"max_concurrent"`
	Weight           *float64           `json:"scheduler_weight"`
	IsAdmin          *bool              `json:"is_admin"`
	IsAuditor        *bool              `json:"is_auditor"`
	KeyExpiryDays    *int               `json:"api_key_expiry_days"`
	MaxKeys          *int               `json:"max_api_keys"`
	ModelAccess      nullable[[]string] `json:"model_access"` // patterns; [] or null: every model
}

// newGroup has the reference's defaults for a group created without them.
func newGroup() store.Group {
	return store.Group{TokenBudget: 100_000, BudgetPeriodDays: DefaultBudgetPeriodDays, RPM: 30, Weight: 1, KeyExpiryDays: 45, MaxKeys: 16}
}

func (in *groupIn) apply(g *store.Group) error {
	if in.Name != nil {
		if err := checkName("name", *in.Name, 50); err != nil {
			return err
		}
		g.Name = *in.Name
	}
	if in.DisplayName != nil {
		if err := checkText("display_name", *in.DisplayName, 0, 100); err != nil {
			return err
		}
	}
	if in.Description != nil {
		if err := checkText("description", *in.Description, 0, 1000); err != nil {
			return err
		}
		g.Description = *in.Description
	}
	set := func(field string, p *int, dst *int, min, max int) error {
		if p == nil {
			return nil
		}
		if err := checkRange(field, *p, min, max); err != nil {
			return err
		}
		*dst = *p
		return nil
	}
	if in.TokenBudget != nil {
		if err := checkRange("token_budget", *in.TokenBudget, 0, maxTokens); err != nil {
			return err
		}
		g.TokenBudget = *in.TokenBudget
	}
	if in.Weight != nil {
		if err := checkWeight("scheduler_weight", *in.Weight); err != nil {
			return err
		}
		g.Weight = *in.Weight
	}
	if in.ModelAccess.Set {
		if err := checkModelAccess("model_access", in.ModelAccess.V); err != nil {
			return err
		}
		g.ModelAccess = in.ModelAccess.V // null leaves V nil: every model
	}
	if in.IsAdmin != nil {
		g.IsAdmin = *in.IsAdmin
	}
	if in.IsAuditor != nil {
		g.IsAuditor = *in.IsAuditor
	}
	return errors.Join(
		set("budget_period_days", in.BudgetPeriodDays, &g.BudgetPeriodDays, 1, 3650),
		set("rpm_limit", in.RPM, &g.RPM, 0, maxRPM),
		set("max_concurrent", in.MaxConcurrent, &g.MaxConcurrent, 0, maxConcurrent),
		set("api_key_expiry_days", in.KeyExpiryDays, &g.KeyExpiryDays, 0, 3650),
		set("max_api_keys", in.MaxKeys, &g.MaxKeys, 0, 10_000),
	)
}

func (h *Handler) group(c *call, id int64) (store.Group, error) {
	g, err := h.st.Group(c.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return g, notFound("Group not found")
	}
	if err != nil {
		return g, fmt.Errorf("read group %d: %w", id, err)
	}
	return g, nil
}

func (h *Handler) groupWithCount(c *call, g store.Group) (groupView, error) {
	_, n, err := h.st.Users(c.ctx, store.UserFilter{GroupID: g.ID, Limit: 1})
	if err != nil {
		return groupView{}, fmt.Errorf("count users of group %d: %w", g.ID, err)
	}
	v := viewGroup(g)
	v.UserCount = &n
	return v, nil
}

func (h *Handler) listGroups(c *call) (any, error) {
	gs, err := h.st.Groups(c.ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	out := make([]groupView, 0, len(gs))
	for _, g := range gs {
		v, err := h.groupWithCount(c, g)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return map[string]any{"groups": out}, nil
}

func (h *Handler) getGroup(c *call) (any, error) {
	g, err := h.group(c, c.id())
	if err != nil {
		return nil, err
	}
	return h.groupWithCount(c, g)
}

func (h *Handler) createGroup(c *call) (any, error) {
	var in groupIn
	if _, err := decode(c.req.Body, &in); err != nil {
		return nil, err
	}
	if in.Name == nil {
		return nil, badRequest("field name: required")
	}
	g := newGroup()
	if err := in.apply(&g); err != nil {
		return nil, err
	}
	if err := h.st.CreateGroup(c.ctx, &g); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, conflict(fmt.Sprintf("Group with name '%s' already exists", g.Name))
		}
		return nil, fmt.Errorf("create group: %w", err)
	}
	v := viewGroup(g)
	h.record(c, "group.create", "group", g.ID, map[string]any{"after": v})
	return v, nil
}

func (h *Handler) updateGroup(c *call) (any, error) {
	var in groupIn
	fields, err := decode(c.req.Body, &in)
	if err != nil {
		return nil, err
	}
	if len(fields) == 0 {
		return nil, badRequest("No fields to update")
	}
	g, err := h.group(c, c.id())
	if err != nil {
		return nil, err
	}
	if err := in.apply(&g); err != nil {
		return nil, err
	}
	// The store refuses to take is_admin from the last admin group with
	// an active member, in the transaction that writes it: two admins
	// demoting the last two admin groups at once, on any replicas, cannot
	// both pass (otherwise no key would hold the admin scope, the
	// caller's included, until the bootstrap key's EnsureAdmin at the
	// next start).
	if err := h.st.UpdateGroupKeepingAdmin(c.ctx, &g); err != nil {
		switch {
		case errors.Is(err, store.ErrLastAdmin):
			return nil, conflict(lastAdminGroup)
		case errors.Is(err, store.ErrConflict):
			return nil, conflict(fmt.Sprintf("Group with name '%s' already exists", g.Name))
		case errors.Is(err, store.ErrNotFound):
			return nil, notFound("Group not found")
		}
		return nil, fmt.Errorf("update group: %w", err)
	}
	// Every member's cached limits and scope ceiling are stale.
	h.keys.InvalidateAll(c.ctx)
	v := viewGroup(g)
	h.record(c, "group.update", "group", g.ID, map[string]any{"fields": fields, "after": v})
	return map[string]any{"status": "updated", "group_id": g.ID, "group": v}, nil
}

func (h *Handler) deleteGroup(c *call) (any, error) {
	g, err := h.group(c, c.id())
	if err != nil {
		return nil, err
	}
	if err := h.st.DeleteGroup(c.ctx, g.ID); err != nil {
		switch {
		case errors.Is(err, store.ErrConflict):
			return nil, conflict("Cannot delete group with users. Reassign users first.")
		case errors.Is(err, store.ErrNotFound):
			return nil, notFound("Group not found")
		}
		return nil, fmt.Errorf("delete group: %w", err)
	}
	h.keys.InvalidateAll(c.ctx)
	h.record(c, "group.delete", "group", g.ID, map[string]any{"before": viewGroup(g)})
	return done("deleted", "group_id", g.ID), nil
}

// lastAdminGroup is the 409's detail for a demotion of the last admin
// group with an active member.
const lastAdminGroup = "This is the last admin group with an active member: taking is_admin from it would leave no key with the admin scope. Make another group with an active member an admin group first."
